//! From an image file's bytes to the pixels a network's crops are cut from: decoded to RGB
//! (large JPEGs at a reduced DCT scale, as libjpeg-turbo and PIL's draft mode offer, so a
//! photograph many times the target costs a fraction of a full decode; [`DCT_MARGIN`] says
//! how large) and resized so that the shorter side is the one asked for, to torchvision's
//! output size, with a SIMD convolution resizer whose filters are Pillow's own (box: exact
//! area averaging; antialiased bilinear: torchvision's `Resize`).

use fast_image_resize as fir;

/// The filter images are resized with: Pillow's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Exact area averaging (Pillow's box filter).
    Area,
    /// Pillow's antialiased bilinear (torchvision's `Resize`).
    Bilinear,
}

/// An image as interleaved 8-bit RGB, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rgb {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes: R, G, B of each pixel, rows top to bottom.
    pub pixels: Vec<u8>,
}

impl Rgb {
    /// The shorter side.
    pub fn shorter_side(&self) -> usize {
        self.width.min(self.height)
    }
}

/// An image as decoded, possibly at a reduced DCT scale, with the size the file holds it at
/// (what its resized size is computed from, so a reduced decode resizes to the same size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The pixels decoded.
    pub image: Rgb,
    /// The file's own width.
    pub width: usize,
    /// The file's own height.
    pub height: usize,
}

impl Decoded {
    /// Resized with `filter` so that its shorter side is `side`, to the size torchvision's
    /// `Resize(side)` gives the file's own size ([`shorter_side_size`]); the decoded pixels'
    /// buffer is kept for reuse.
    pub fn resized(self, side: usize, filter: Filter) -> Rgb {
        let (width, height) = shorter_side_size(self.width, self.height, side);
        if (width, height) == (self.image.width, self.image.height) {
            return self.image;
        }
        let out = resize(&self.image, width, height, filter);
        recycle(self.image.pixels);
        out
    }
}

impl From<Rgb> for Decoded {
    fn from(image: Rgb) -> Self {
        Decoded { width: image.width, height: image.height, image }
    }
}

/// The DCT scales a JPEG may be decoded at (eighths): 1/8, 1/4, 1/2.
const DCT_SCALES: [usize; 3] = [8, 4, 2];

/// How many times the target the shorter side of a reduced decode keeps. The reduced
/// inverse DCT is not an area average, and what it loses shows after the resize: against a
/// full decode resized alike (tests/fixtures/photos, targets 36 to 259) the worst measured was
/// 27.5 dB at 1 (libjpeg's and PIL's draft mode rule: the smallest scale still at least the
/// target), 33.5 dB at 3 and 38.1 dB at 4.
pub const DCT_MARGIN: usize = 4;

/// The largest reduction `1/d` of the DCT scales whose image keeps its shorter side at least
/// [`DCT_MARGIN`] times `target` (the decoders round each side up to a whole pixel), or
/// `None` for a full decode.
pub fn dct_reduction(width: usize, height: usize, target: usize) -> Option<usize> {
    let shorter = width.min(height);
    DCT_SCALES.into_iter().find(|&d| shorter.div_ceil(d) >= DCT_MARGIN * target.max(1))
}

/// Whether `bytes` start as a JPEG does (the SOI marker).
fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0xD8, 0xFF])
}

/// The most the longer side of an image may be, in multiples of its shorter side, for owt to
/// resize it: panoramas of 10:1 are far inside, while a strip of 1,000,000 x 1 pixels (a
/// 1 KB PNG) resized to a shorter side of 36 would be 36,000,000 x 36 pixels, 3.9 GB.
pub const MAX_ASPECT_RATIO: usize = 64;

/// Why an image of `width` x `height` pixels is not resized, if it is not: an empty side, or
/// sides more than [`MAX_ASPECT_RATIO`] to 1 apart (its resize would be [`MAX_ASPECT_RATIO`]
/// times larger than a square image's, and more).
pub fn check_aspect_ratio(width: usize, height: usize) -> Result<(), String> {
    let (long, short) = (width.max(height), width.min(height));
    if short == 0 {
        return Err(format!("an image of {width} x {height} pixels"));
    }
    if long > MAX_ASPECT_RATIO * short {
        return Err(format!(
            "an image of {width} x {height} pixels: its sides are more than {MAX_ASPECT_RATIO}:1 apart, beyond what owt resizes"
        ));
    }
    Ok(())
}

/// The most pixels an image may have once resized for owt to resize it: 2^26 (a square of
/// 8,192 pixels a side, 201 MB as RGB), so that neither a large `--resize` nor a long image
/// within [`MAX_ASPECT_RATIO`] makes one image's resize gigabytes.
pub const MAX_RESIZED_PIXELS: usize = 1 << 26;

/// Why an image of `width` x `height` pixels is not resized to a shorter side of `target`, if
/// it is not: [`check_aspect_ratio`]'s reasons, or a result of more than
/// [`MAX_RESIZED_PIXELS`] pixels.
pub fn check_resizable(width: usize, height: usize, target: usize) -> Result<(), String> {
    check_aspect_ratio(width, height)?;
    let (long, short) = (width.max(height), width.min(height));
    let longer = (target as u128 * long as u128).div_ceil(short as u128);
    let pixels = target as u128 * longer;
    if pixels > MAX_RESIZED_PIXELS as u128 {
        return Err(format!(
            "an image of {width} x {height} pixels: resized to a shorter side of {target} it would be {pixels} pixels, more than the {MAX_RESIZED_PIXELS} owt resizes"
        ));
    }
    Ok(())
}

/// The image in `bytes` (JPEG, PNG) as RGB, decoded at a reduced DCT scale where it keeps
/// [`DCT_MARGIN`] times the `target` shorter side ([`dct_reduction`]), or why it cannot be
/// decoded (including an image too long or too large to resize to `target`,
/// [`check_resizable`]).
pub fn decode(bytes: &[u8], target: usize) -> Result<Decoded, String> {
    if is_jpeg(bytes) {
        return decode_jpeg(bytes, target);
    }
    let image = image::load_from_memory(bytes).map_err(|e| e.to_string())?.into_rgb8();
    let (width, height) = (image.width() as usize, image.height() as usize);
    check_resizable(width, height, target)?;
    Ok(Rgb { width, height, pixels: image.into_raw() }.into())
}

/// Whether a JPEG's bytes hold a whole image: its headers, then scan data, then the
/// end-of-image marker, or why not. Both decoders fill what a file lacks (zune-jpeg with grey,
/// jpeg-decoder with its last rows) and return the image without an error, so a file cut
/// short, or holding headers and no scan data, would be trained on as an image. The headers
/// are walked by their lengths up to the first scan (so an EXIF thumbnail's own end marker
/// does not count), and a scan's data cannot hold the end marker's bytes (a 0xFF there is
/// followed by 0x00 or a restart marker), so the marker after it is the file's own.
pub fn check_complete_jpeg(bytes: &[u8]) -> Result<(), String> {
    const CUT_IN_HEADERS: &str = "a JPEG whose data ends early (in its headers, before any scan data)";
    const SOS: u8 = 0xDA;
    const EOI: u8 = 0xD9;
    let mut at = 2; // after SOI
    loop {
        // Fill bytes (0xFF runs) may precede a marker.
        while bytes.get(at) == Some(&0xFF) && bytes.get(at + 1) == Some(&0xFF) {
            at += 1;
        }
        match (bytes.get(at), bytes.get(at + 1)) {
            (Some(0xFF), Some(&SOS)) => break,
            (Some(0xFF), Some(&EOI)) => {
                return Err("a JPEG with no scan data (its end marker follows its headers)".into())
            }
            (Some(0xFF), Some(&m)) if (0xD0..=0xD7).contains(&m) || m == 0x01 => at += 2,
            (Some(0xFF), Some(_)) => {
                let len = match (bytes.get(at + 2), bytes.get(at + 3)) {
                    (Some(&hi), Some(&lo)) => usize::from(hi) << 8 | usize::from(lo),
                    _ => return Err(CUT_IN_HEADERS.into()),
                };
                if len < 2 || at + 2 + len > bytes.len() {
                    return Err(CUT_IN_HEADERS.into());
                }
                at += 2 + len;
            }
            (None, _) | (_, None) => return Err(CUT_IN_HEADERS.into()),
            // Stray bytes between segments: skipped to the next marker, as libjpeg does
            // (it warns of "extraneous bytes before marker" and decodes on).
            (Some(_), _) => at += 1,
        }
    }
    let scans = &bytes[at..];
    if scans.windows(2).any(|w| w == [0xFF, EOI]) {
        Ok(())
    } else {
        Err("a JPEG whose data ends early (no end-of-image marker after its scan data)".into())
    }
}

/// A JPEG: at full scale through zune-jpeg (the faster decoder measured here), at a reduced
/// DCT scale through jpeg-decoder (zune-jpeg has none). Refused when not whole
/// ([`check_complete_jpeg`]).
fn decode_jpeg(bytes: &[u8], target: usize) -> Result<Decoded, String> {
    check_complete_jpeg(bytes)?;
    let mut header = jpeg_decoder::Decoder::new(bytes);
    header.read_info().map_err(|e| e.to_string())?;
    let info = header.info().ok_or("a JPEG without a frame header")?;
    let (width, height) = (info.width as usize, info.height as usize);
    if width == 0 || height == 0 {
        return Err(format!("a JPEG of {width} x {height} pixels"));
    }
    check_resizable(width, height, target)?;
    let image = match dct_reduction(width, height, target) {
        Some(d) => decode_scaled(header, info, d)?,
        None => decode_full(bytes)?,
    };
    Ok(Decoded { image, width, height })
}

/// A full-scale decode (zune-jpeg) into a buffer of this thread's, converted to RGB whatever
/// the file's colour space.
fn decode_full(bytes: &[u8]) -> Result<Rgb, String> {
    use zune_core::colorspace::ColorSpace;
    let options = zune_core::options::DecoderOptions::new_fast().jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(zune_core::bytestream::ZCursor::new(bytes), options);
    decoder.decode_headers().map_err(|e| e.to_string())?;
    let (width, height) = decoder.dimensions().ok_or("a JPEG without dimensions")?;
    let size = decoder.output_buffer_size().ok_or("a JPEG without an output size")?;
    let mut pixels = take_buffer(size);
    if let Err(e) = decoder.decode_into(&mut pixels) {
        recycle(pixels);
        return Err(e.to_string());
    }
    let out = decoder.output_colorspace().unwrap_or(ColorSpace::RGB);
    let pixels = match out.num_components() {
        3 => pixels,
        1 => pixels.iter().flat_map(|&v| [v, v, v]).collect(),
        n => return Err(format!("a JPEG decoded to {n} components per pixel, expected 3")),
    };
    check_len(&pixels, width, height)?;
    Ok(Rgb { width, height, pixels })
}

/// The most spare pixel buffers a thread keeps for reuse.
const SPARE_BUFFERS: usize = 4;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer of `len` bytes whose contents are to be overwritten: one of this thread's spare
/// buffers where it has one (no allocation, and no zeroing when it is already long enough).
pub fn take_buffer(len: usize) -> Vec<u8> {
    let mut buffer = SPARE.with_borrow_mut(|spare| {
        let fit = spare.iter().position(|b| b.capacity() >= len);
        fit.map(|i| spare.swap_remove(i)).or_else(|| spare.pop()).unwrap_or_default()
    });
    if buffer.len() >= len {
        buffer.truncate(len);
    } else {
        buffer.resize(len, 0);
    }
    buffer
}

/// Gives `buffer` back for reuse by [`take_buffer`] on this thread (an image's pixels once
/// its crop is cut): decoding and resizing then allocate nothing image after image.
pub fn recycle(buffer: Vec<u8>) {
    SPARE.with_borrow_mut(|spare| {
        if spare.len() < SPARE_BUFFERS {
            spare.push(buffer);
        }
    });
}

/// A decode at DCT scale `1/d` (jpeg-decoder's reduced inverse DCT), converted to RGB.
fn decode_scaled(
    mut decoder: jpeg_decoder::Decoder<&[u8]>,
    info: jpeg_decoder::ImageInfo,
    d: usize,
) -> Result<Rgb, String> {
    let (w, h) = (info.width.div_ceil(d as u16), info.height.div_ceil(d as u16));
    let (width, height) = decoder.scale(w, h).map_err(|e| e.to_string())?;
    let raw = decoder.decode().map_err(|e| e.to_string())?;
    let (width, height) = (width as usize, height as usize);
    let pixels = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => raw,
        jpeg_decoder::PixelFormat::L8 => raw.iter().flat_map(|&v| [v, v, v]).collect(),
        jpeg_decoder::PixelFormat::L16 => raw.chunks_exact(2).flat_map(|v| [v[0], v[0], v[0]]).collect(),
        // Adobe's inverted CMYK, as JPEGs store it: R = C K / 255 of the stored values.
        jpeg_decoder::PixelFormat::CMYK32 => raw
            .chunks_exact(4)
            .flat_map(|p| {
                let k = p[3] as u32;
                [0, 1, 2].map(|c| ((p[c] as u32 * k + 127) / 255) as u8)
            })
            .collect(),
    };
    check_len(&pixels, width, height)?;
    Ok(Rgb { width, height, pixels })
}

fn check_len(pixels: &[u8], width: usize, height: usize) -> Result<(), String> {
    if pixels.len() == width * height * 3 {
        return Ok(());
    }
    Err(format!("a JPEG of {width} x {height} decoded to {} bytes, expected {}", pixels.len(), width * height * 3))
}

/// The size torchvision's `Resize(side)` gives a `width` x `height` image: the shorter side
/// `side`, the longer `side * longer / shorter` rounded down.
pub fn shorter_side_size(width: usize, height: usize, side: usize) -> (usize, usize) {
    if width <= height {
        (side, side * height / width.max(1))
    } else {
        (side * width / height.max(1), side)
    }
}

/// `image` resized with `filter` so that its shorter side is `side` (see
/// [`shorter_side_size`]); unchanged when it already has that size.
pub fn resize_shorter_to(image: &Rgb, side: usize, filter: Filter) -> Rgb {
    let (width, height) = shorter_side_size(image.width, image.height, side);
    resize(image, width, height, filter)
}

/// `image` resized to `width` x `height` with `filter` (Pillow's box or antialiased bilinear
/// filter); a copy when the size is its own.
pub fn resize(image: &Rgb, width: usize, height: usize, filter: Filter) -> Rgb {
    if (width, height) == (image.width, image.height) {
        return image.clone();
    }
    let filter = match filter {
        Filter::Area => fir::FilterType::Box,
        Filter::Bilinear => fir::FilterType::Bilinear,
    };
    let source =
        fir::images::ImageRef::new(image.width as u32, image.height as u32, &image.pixels, fir::PixelType::U8x3)
            .expect("an RGB image holds width x height x 3 bytes");
    let buffer = take_buffer(width * height * 3);
    let mut out = fir::images::Image::from_vec_u8(width as u32, height as u32, buffer, fir::PixelType::U8x3)
        .expect("the buffer holds width x height x 3 bytes");
    let options = fir::ResizeOptions::new().resize_alg(fir::ResizeAlg::Convolution(filter));
    // One resizer per thread: it keeps its buffers between images.
    RESIZER.with_borrow_mut(|r| r.resize(&source, &mut out, &options)).expect("both images are U8x3 and not empty");
    Rgb { width, height, pixels: out.into_vec() }
}

thread_local! {
    static RESIZER: std::cell::RefCell<fir::Resizer> = std::cell::RefCell::new(fir::Resizer::new());
}

/// Peak signal-to-noise ratio of `b` against `a` (same length), in dB; infinite when equal.
pub fn psnr(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len(), "PSNR of images of different sizes");
    let se: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    let mse = se / a.len().max(1) as f64;
    10.0 * (255.0f64 * 255.0 / mse).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resizes_beyond_the_pixel_limit_are_refused() {
        // A 64:1 panorama to a shorter side of 1024: 1024 x 65536 = 2^26, at the limit.
        assert!(check_resizable(6400, 100, 1024).is_ok());
        let e = check_resizable(6400, 100, 1025).unwrap_err();
        assert!(e.contains("resized to a shorter side of 1025") && e.contains("more than the 67108864"), "{e}");
        // Any image to a side past 8192.
        assert!(check_resizable(100, 100, 8192).is_ok() && check_resizable(100, 100, 8193).is_err());
        assert!(check_resizable(641, 10, 1).unwrap_err().contains("64:1"));
    }

    #[test]
    fn sides_more_than_64_to_1_apart_are_not_resized() {
        assert!(check_aspect_ratio(640, 10).is_ok());
        assert!(check_aspect_ratio(10, 640).is_ok());
        let e = check_aspect_ratio(1_000_000, 1).unwrap_err();
        assert!(e.contains("1000000 x 1 pixels") && e.contains("64:1"), "{e}");
        assert!(check_aspect_ratio(641, 10).is_err() && check_aspect_ratio(0, 10).is_err());
        let mut png = Vec::new();
        image::GrayImage::from_pixel(100_000, 1, image::Luma([7]))
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        assert!(png.len() < 2000, "a small file");
        assert!(decode(&png, 36).unwrap_err().contains("64:1"));
    }

    #[test]
    fn reductions_keep_four_times_the_target() {
        assert_eq!(dct_reduction(500, 375, 256), None, "ImageNet's typical image decodes whole for 256");
        assert_eq!(dct_reduction(2048, 3000, 256), Some(2), "1024 = 4 x 256");
        assert_eq!(dct_reduction(2047, 3000, 256), Some(2), "2047 / 2 rounds up to 1024");
        assert_eq!(dct_reduction(2046, 3000, 256), None);
        assert_eq!(dct_reduction(4000, 3000, 256), Some(2), "3000 / 4 = 750 < 1024");
        assert_eq!(dct_reduction(1411, 1411, 36), Some(8), "1411 / 8 = 177 >= 144");
        assert_eq!(dct_reduction(500, 375, 32), Some(2), "375 / 4 = 94 < 128");
    }

    #[test]
    fn resize_sizes_are_torchvisions() {
        assert_eq!(shorter_side_size(500, 375, 256), (341, 256));
        assert_eq!(shorter_side_size(375, 500, 256), (256, 341));
        assert_eq!(shorter_side_size(300, 300, 256), (256, 256));
        assert_eq!(shorter_side_size(451, 300, 113), (169, 113));
    }
}
