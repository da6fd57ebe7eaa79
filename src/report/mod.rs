//! A run drawn as one picture (`owt report`): train and test loss and accuracy per epoch, the
//! learning rate of each epoch, and for mesh runs the bytes per step that each layer moved
//! between ranks in each phase (forward, backward, gradient sync), as bars. PNG or SVG, text in
//! the bundled DejaVu Sans Mono so the picture looks the same on every machine.

pub mod filters;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::OwtError;
use crate::train::atomic::write_atomic;
use crate::train::metrics::TrafficPerStep;
use crate::train::EpochMetrics;

/// The picture's size in pixels (PNG) or user units (SVG).
pub const SIZE: (u32, u32) = (1200, 900);
/// Training curves' colour.
pub const TRAIN_COLOR: RGBColor = RGBColor(31, 119, 180);
/// Test curves' colour.
pub const TEST_COLOR: RGBColor = RGBColor(214, 39, 40);
/// The learning rate's colour.
pub const LR_COLOR: RGBColor = RGBColor(44, 160, 44);
/// The test top-5 accuracy curve.
pub const TOP5_COLOR: RGBColor = RGBColor(140, 86, 75);
/// Each phase's bar colour in the traffic chart.
/// (`other` is traffic recorded outside any labelled layer.)
pub const PHASE_COLORS: [(&str, RGBColor); 4] = [
    ("forward", RGBColor(255, 127, 14)),
    ("backward", RGBColor(148, 103, 189)),
    ("sync", RGBColor(23, 190, 207)),
    ("other", RGBColor(188, 189, 34)),
];

const FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");
const FONT: &str = "sans-serif";

/// The file formats `owt report` writes, chosen by the output's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A PNG image.
    Png,
    /// An SVG document.
    Svg,
}

impl Format {
    /// The format `path`'s extension names, or an error naming the two it can be.
    pub fn of(path: &Path) -> Result<Format, OwtError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(Format::Png),
            Some("svg") => Ok(Format::Svg),
            _ => Err(OwtError::input(format!(
                "cannot tell the picture format of {}: expected a name ending in .png or .svg",
                path.display()
            ))),
        }
    }
}

/// Draws `epochs` (a run's metrics, in order) under `title` into `out` (PNG or SVG by its
/// extension), written atomically.
pub fn render(title: &str, epochs: &[EpochMetrics], out: &Path) -> Result<(), OwtError> {
    let format = Format::of(out)?;
    if epochs.is_empty() {
        return Err(OwtError::input("the run has no finished epoch to draw: expected at least 1"));
    }
    register_font()?;
    let (w, h) = SIZE;
    let bytes = match format {
        Format::Png => {
            let mut pixels = vec![0u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
                draw(&root, title, epochs).map_err(drawing_failed)?;
                root.present().map_err(|e| drawing_failed(e.to_string()))?;
            }
            let image = image::RgbImage::from_raw(w, h, pixels).expect("the buffer holds w x h RGB pixels");
            let mut png = std::io::Cursor::new(Vec::new());
            image
                .write_to(&mut png, image::ImageFormat::Png)
                .map_err(|e| OwtError::io(format!("cannot encode the PNG: {e}")))?;
            png.into_inner()
        }
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                draw(&root, title, epochs).map_err(drawing_failed)?;
                root.present().map_err(|e| drawing_failed(e.to_string()))?;
            }
            svg.into_bytes()
        }
    };
    write_atomic(out, &bytes)
}

fn drawing_failed(e: String) -> OwtError {
    OwtError::io(format!("cannot draw the report: {e}"))
}

/// Makes the bundled font plotters' sans-serif (once per process).
fn register_font() -> Result<(), OwtError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    ok.then_some(()).ok_or_else(|| OwtError::io("the bundled font (DejaVu Sans Mono) cannot be read"))
}

type Result2<T> = std::result::Result<T, String>;

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The four panels: loss, accuracy, learning rate, traffic.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, epochs: &[EpochMetrics]) -> Result2<()> {
    root.fill(&WHITE).map_err(text)?;
    let root = root.titled(title, (FONT, 22)).map_err(text)?;
    let panels = root.split_evenly((2, 2));
    let at = |f: fn(&EpochMetrics) -> f64| epochs.iter().map(|m| (m.epoch as f64, f(m))).collect::<Vec<_>>();
    curves(
        &panels[0],
        "loss per image",
        "loss",
        &[("train", TRAIN_COLOR, at(|m| m.train_loss)), ("test", TEST_COLOR, at(|m| m.test_loss))],
        // Losses fall and accuracies rise: the legends go where the curves are not.
        SeriesLabelPosition::UpperRight,
    )?;
    let mut accuracy = vec![
        ("train (dropout on)", TRAIN_COLOR, at(|m| 100.0 * m.train_accuracy)),
        ("test", TEST_COLOR, at(|m| 100.0 * m.test_accuracy)),
    ];
    let top5: Vec<(f64, f64)> =
        epochs.iter().filter_map(|m| m.test_top5_accuracy.map(|t| (m.epoch as f64, 100.0 * t))).collect();
    if !top5.is_empty() {
        accuracy.push(("test top-5", TOP5_COLOR, top5));
    }
    curves(&panels[1], "accuracy", "%", &accuracy, SeriesLabelPosition::LowerRight)?;
    learning_rate(&panels[2], epochs)?;
    traffic(&panels[3], epochs)
}

/// The x range of `epochs` epochs, half an epoch of room either side.
fn epoch_range(points: &[(f64, f64)]) -> std::ops::Range<f64> {
    let (lo, hi) = points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| (l.min(p.0), h.max(p.0)));
    lo - 0.5..hi + 0.5
}

/// The largest magnitude a linear axis spans: beyond it, padding overflows to infinity and
/// plotters' tick stepping never ends.
const AXIS_LIMIT: f64 = 1e300;

/// `lo..hi` with 8% of room above and below (and some room when the values are all equal, or
/// differ by next to nothing), kept within ±[`AXIS_LIMIT`].
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let (lo, hi) = (lo.clamp(-AXIS_LIMIT, AXIS_LIMIT), hi.clamp(-AXIS_LIMIT, AXIS_LIMIT));
    let scale = lo.abs().max(hi.abs()).max(1e-3);
    let pad = if hi - lo > 1e-9 * scale { 0.08 * (hi - lo) } else { 0.1 * scale };
    lo - pad..hi + pad
}

fn epoch_label(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round())
    } else {
        String::new()
    }
}

/// Curves (with a dot per epoch, so a one-epoch run shows) against the epoch.
fn curves<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    y_desc: &str,
    series: &[(&str, RGBColor, Vec<(f64, f64)>)],
    legend_at: SeriesLabelPosition,
) -> Result2<()> {
    let x = epoch_range(&series[0].2);
    let y = padded(series.iter().flat_map(|s| s.2.iter().map(|p| p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(y_desc)
        .x_label_formatter(&epoch_label)
        .label_style((FONT, 13))
        .draw()
        .map_err(text)?;
    for (name, color, points) in series {
        let color = *color;
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(text)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(text)?;
    }
    chart
        .configure_series_labels()
        .position(legend_at)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(text)
}

/// Rates this close to zero or this large have no place on a drawn axis: plotters' log scale
/// steps through decades from the smallest, and a subnormal start underflows to zero and never
/// reaches the top (`owt report` hung on a run at `--lr 3e-323`).
const DRAWN_RATES: std::ops::RangeInclusive<f64> = 1e-300..=1e300;

/// The learning rate per epoch: on a log scale when every rate is positive and within
/// [`DRAWN_RATES`], on a linear one from zero when some rate is zero (or too small for a log
/// axis), and as a sentence when none can be drawn.
fn learning_rate<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, epochs: &[EpochMetrics]) -> Result2<()> {
    let caption = "learning rate";
    let points: Vec<(f64, f64)> = epochs.iter().filter_map(|m| m.lr.map(|lr| (m.epoch as f64, lr))).collect();
    if points.is_empty() {
        return note(area, caption, "not recorded (a run from before schedules)");
    }
    let (lo, hi) = points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| (l.min(p.1), h.max(p.1)));
    let builder = |area| {
        let mut b = ChartBuilder::on(area);
        b.caption(caption, (FONT, 18)).margin(12).x_label_area_size(40).y_label_area_size(60);
        b
    };
    if DRAWN_RATES.contains(&(lo / 2.0)) && DRAWN_RATES.contains(&(hi * 2.0)) {
        let chart = builder(area).build_cartesian_2d(epoch_range(&points), (lo / 2.0..hi * 2.0).log_scale());
        rate_stairs(chart.map_err(text)?, &points, "rate (log scale)")
    } else if lo >= 0.0 && DRAWN_RATES.contains(&hi) {
        let chart = builder(area).build_cartesian_2d(epoch_range(&points), 0.0..1.1 * hi);
        let what = format!("rate (linear: {lo:.1e} is too small for a log scale)");
        rate_stairs(chart.map_err(text)?, &points, &what)
    } else {
        let sentence =
            format!("from {lo:.3e} to {hi:.3e}: outside {:e}..{:e}, not drawn", DRAWN_RATES.start(), DRAWN_RATES.end());
        note(area, caption, &sentence)
    }
}

/// The rate as a staircase on `chart`, each step one epoch wide (a rate holds for an epoch).
fn rate_stairs<DB: DrawingBackend, Y>(
    mut chart: ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    points: &[(f64, f64)],
    y_desc: &str,
) -> Result2<()>
where
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(y_desc)
        .light_line_style(WHITE)
        .x_label_formatter(&epoch_label)
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .label_style((FONT, 13))
        .draw()
        .map_err(text)?;
    let stairs = points.iter().flat_map(|&(e, lr)| [(e - 0.5, lr), (e + 0.5, lr)]);
    chart.draw_series(LineSeries::new(stairs, LR_COLOR.stroke_width(2))).map_err(text)?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, LR_COLOR.filled()))).map_err(text)?;
    Ok(())
}

/// A panel that holds only a sentence.
fn note<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, caption: &str, sentence: &str) -> Result2<()> {
    let area = area.margin(12, 12, 12, 12).titled(caption, (FONT, 18)).map_err(text)?;
    area.draw_text(sentence, &(FONT, 15).into_text_style(&area), (20, 60)).map_err(text)
}

/// Layers in network order: conv layers, then FC layers, by number, then anything else.
fn layer_order(layer: &str) -> (u8, u32, String) {
    let digits: String = layer.chars().filter(char::is_ascii_digit).collect();
    let number = digits.parse().unwrap_or(u32::MAX);
    let rank = if layer.starts_with("conv") {
        0
    } else if layer.starts_with("fc") {
        1
    } else {
        2
    };
    (rank, number, layer.to_string())
}

/// Bytes per step by layer, then phase, from the last epoch that ran on a mesh.
pub fn traffic_by_layer(epochs: &[EpochMetrics]) -> Option<Vec<(String, BTreeMap<String, f64>)>> {
    let by_phase: &BTreeMap<String, TrafficPerStep> =
        &epochs.iter().rev().find_map(|m| m.communication.as_ref())?.by_phase;
    let mut layers: BTreeMap<(u8, u32, String), BTreeMap<String, f64>> = BTreeMap::new();
    for (key, t) in by_phase {
        let (layer, phase) = key.split_once(':').unwrap_or(("unlabelled", "other"));
        *layers.entry(layer_order(layer)).or_default().entry(phase.to_string()).or_default() += t.bytes;
    }
    Some(layers.into_iter().map(|((_, _, name), phases)| (name, phases)).collect())
}

/// Bars of bytes per step, one group per layer, one bar per phase.
fn traffic<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, epochs: &[EpochMetrics]) -> Result2<()> {
    let caption = "bytes between ranks per step";
    let layers = match traffic_by_layer(epochs) {
        None => return note(area, caption, "one device: nothing crossed between devices"),
        Some(l) if l.is_empty() => return note(area, caption, "none recorded per layer"),
        Some(l) => l,
    };
    let max = layers.iter().flat_map(|(_, p)| p.values().copied()).fold(0f64, f64::max);
    let (unit, scale) = match max {
        m if m >= 1e6 => ("MB", 1e6),
        m if m >= 1e3 => ("KB", 1e3),
        _ => ("bytes", 1.0),
    };
    let names: Vec<String> = layers.iter().map(|(n, _)| n.clone()).collect();
    let label = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < names.len() {
            names[i as usize].clone()
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{caption} (last epoch)"), (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..layers.len() as f64 - 0.5, 0.0..1.1 * max.max(1.0) / scale)
        .map_err(text)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(layers.len())
        .x_label_formatter(&label)
        .y_desc(unit)
        .label_style((FONT, 13))
        .draw()
        .map_err(text)?;
    let width = 0.8 / PHASE_COLORS.len() as f64;
    for (j, (phase, color)) in PHASE_COLORS.iter().enumerate() {
        let offset = -0.4 + width * j as f64;
        let bars = layers.iter().enumerate().filter_map(|(i, (_, phases))| {
            let bytes = *phases.get(*phase)?;
            let x = i as f64 + offset;
            Some(Rectangle::new([(x + 0.02 * width, 0.0), (x + 0.98 * width, bytes / scale)], color.filled()))
        });
        let color = *color;
        chart
            .draw_series(bars)
            .map_err(text)?
            .label(*phase)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epochs(values: &[(f64, f64)]) -> Vec<EpochMetrics> {
        values
            .iter()
            .enumerate()
            .map(|(i, &(lr, loss))| EpochMetrics {
                epoch: i + 1,
                train_loss: loss,
                train_accuracy: 0.5,
                test_loss: loss,
                test_accuracy: 0.5,
                test_top5_accuracy: None,
                lr: Some(lr),
                images_per_second: 1.0,
                input_wait_s: None,
                seconds: 1.0,
                layout: None,
                communication: None,
                loss_scale: None,
            })
            .collect()
    }

    /// Any finite rates and losses, zero and subnormal included, are drawn (or said) in bounded
    /// time: each picture is drawn on a thread and must be done within a minute.
    #[test]
    fn extreme_rates_and_losses_draw_in_bounded_time() {
        let dir = tempfile::tempdir().unwrap();
        let sub = 3e-323;
        let cases: Vec<Vec<(f64, f64)>> = vec![
            vec![(sub, 1.0), (sub * 0.1, 1.0)],
            vec![(0.0, 1.0), (0.0, 1.0)],
            vec![(0.0, 1.0), (0.01, 0.5)],
            vec![(f64::MIN_POSITIVE, 1.0)],
            vec![(5e-324, 1.0)],
            vec![(1e-300, 1.0), (1e300, 1.0)],
            vec![(f64::MAX, 1.0)],
            vec![(0.01, 0.0), (0.01, sub)],
            vec![(0.01, 1e300), (0.01, -1e300)],
            vec![(0.01, f64::MAX), (0.01, f64::MIN_POSITIVE)],
        ];
        for (i, case) in cases.into_iter().enumerate() {
            let out = dir.path().join(format!("r{i}.svg"));
            let (tx, rx) = std::sync::mpsc::channel();
            let metrics = epochs(&case);
            let target = out.clone();
            std::thread::spawn(move || tx.send(render("t", &metrics, &target)).unwrap());
            let done = rx.recv_timeout(std::time::Duration::from_secs(60));
            let result = done.unwrap_or_else(|_| panic!("case {case:?} did not finish within a minute"));
            result.unwrap_or_else(|e| panic!("case {case:?}: {e}"));
            assert!(std::fs::metadata(&out).unwrap().len() > 1000, "case {case:?}");
        }
    }
}
