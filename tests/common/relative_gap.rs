//! How far two sets of named tensors are apart, one number for the equivalence tests of every
//! test binary (a mesh against one device, one backend against another).

/// Largest over parameters of max |a - b| / max |b|, at f64 precision.
pub(crate) fn relative_gap(a: &[(String, Vec<f64>)], b: &[(String, Vec<f64>)]) -> (f64, String) {
    assert_eq!(a.len(), b.len());
    let mut worst = (0.0f64, String::new());
    for ((name, x), (name_b, y)) in a.iter().zip(b) {
        assert_eq!(name, name_b);
        assert_eq!(x.len(), y.len(), "{name}: lengths");
        let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        let diff = x.iter().zip(y).fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        if diff / scale >= worst.0 {
            worst = (diff / scale, name.clone());
        }
    }
    worst
}
