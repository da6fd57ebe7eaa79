//! `owt info`: the layer profile of a model.

use clap::Args;

use owt_models::ModelProfile;

use crate::cli::ModelArgs;
use crate::error::OwtError;

/// Arguments of `owt info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Prints the profile.
pub fn run(args: &InfoArgs) -> Result<(), OwtError> {
    let profile = args.model.spec().architecture()?.profile()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&profile).map_err(|e| OwtError::io(e.to_string()))?);
    } else {
        print!("{}", render_table(&profile));
    }
    Ok(())
}

fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The profile as an aligned text table with totals and the conv / FC split.
pub fn render_table(p: &ModelProfile) -> String {
    let mut out = format!("{}\n{:<8} {:>12} {:>15}  {}\n", p.model, "layer", "params", "MACs/image", "output");
    for l in &p.layers {
        let shape = l.output_shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
        out += &format!(
            "{:<8} {:>12} {:>15}  {}\n",
            l.name,
            group_thousands(l.params as u64),
            group_thousands(l.macs),
            shape
        );
    }
    out += &format!(
        "{:<8} {:>12} {:>15}\n",
        "total",
        group_thousands(p.total_params as u64),
        group_thousands(p.total_macs)
    );
    let (conv_p, conv_m) = p.sum_by_prefix("conv");
    out += &format!(
        "conv layers: {:.1}% of parameters, {:.1}% of MACs\n",
        100.0 * conv_p as f64 / p.total_params.max(1) as f64,
        100.0 * conv_m as f64 / p.total_macs.max(1) as f64
    );
    out
}
