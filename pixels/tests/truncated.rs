//! Image files cut short, or holding headers and no image data, are undecodable, whatever a
//! decoder would fill in: JPEGs at full scale (zune-jpeg) and at a reduced DCT scale
//! (jpeg-decoder) and PNGs, each cut at several points. Whole files still decode.

use std::io::Cursor;

use owt_pixels::{check_complete_jpeg, decode};

mod common;

fn photo() -> Vec<u8> {
    std::fs::read(common::photos().join("coffee.jpg")).unwrap()
}

/// Where the first scan's data starts (after the SOS segment).
fn first_scan(bytes: &[u8]) -> usize {
    let sos = bytes.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    sos + 2 + (usize::from(bytes[sos + 2]) << 8 | usize::from(bytes[sos + 3]))
}

#[test]
fn jpegs_cut_anywhere_are_refused_at_full_and_reduced_scale() {
    let whole = photo();
    // Targets that decode at full scale and at a reduced DCT scale.
    for target in [256, 36] {
        assert!(decode(&whole, target).is_ok(), "the whole file decodes at {target}");
        let scan = first_scan(&whole);
        let cuts = [
            ("in the headers", 300),
            ("at the scan's start", scan),
            ("a third of its bytes", whole.len() / 3),
            ("two thirds", 2 * whole.len() / 3),
            ("all but the end marker", whole.len() - 2),
            ("all but the end marker's last byte", whole.len() - 1),
        ];
        for (what, at) in cuts {
            let cut = &whole[..at];
            let e = decode(cut, target).err().unwrap_or_else(|| panic!("cut {what} ({at} bytes) decoded at {target}"));
            assert!(e.contains("ends early"), "{what}: {e}");
        }
    }
}

#[test]
fn a_jpeg_of_headers_and_no_scan_data_is_refused() {
    let whole = photo();
    let sos = whole.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let mut headers_only = whole[..sos].to_vec();
    headers_only.extend_from_slice(&[0xFF, 0xD9]);
    let e = decode(&headers_only, 256).unwrap_err();
    assert!(e.contains("no scan data"), "{e}");
}

#[test]
fn stray_bytes_between_segments_and_trailing_bytes_are_not_truncation() {
    let whole = photo();
    // Two stray bytes after the APP0 segment (libjpeg skips them with a warning).
    let app0_end = 4 + (usize::from(whole[4]) << 8 | usize::from(whole[5]));
    let mut stray = whole[..app0_end].to_vec();
    stray.extend_from_slice(&[0x00, 0x17]);
    stray.extend_from_slice(&whole[app0_end..]);
    check_complete_jpeg(&stray).unwrap();
    // Bytes after the end marker (some cameras append data).
    let mut trailing = whole.clone();
    trailing.extend_from_slice(b"trailing data");
    check_complete_jpeg(&trailing).unwrap();
    assert!(decode(&trailing, 256).is_ok());
}

#[test]
fn pngs_cut_anywhere_are_refused() {
    let image = image::load_from_memory(&photo()).unwrap().into_rgb8();
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image).write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
    assert!(decode(&png, 256).is_ok());
    for (what, at) in [
        ("in the header", 20),
        ("a third", png.len() / 3),
        ("two thirds", 2 * png.len() / 3),
        ("all but IEND", png.len() - 12),
    ] {
        assert!(decode(&png[..at], 256).is_err(), "a PNG cut {what} ({at} of {} bytes) decoded", png.len());
    }
}
