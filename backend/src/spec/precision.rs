//! The precision float pieces cross ranks in: their own (the default), or bf16 / f16 as
//! PyTorch DDP's compression hooks send them, halving the bytes of every activity exchange
//! and gradient sum. Pieces are rounded before they leave (a rank's own piece too, so every
//! rank computes from the same values) and widened back to the tensor's dtype on arrival,
//! where reductions add them: sums are taken in the tensor's precision, never in 16 bits.
//! Readouts stay in their own precision: an all-reduce of fewer elements than ranks (a step's
//! loss, its correct count) is a few bytes, and rounding it would only blur what is reported.

use burn::tensor::DType;

/// How float pieces travel between ranks. A value of a mesh handle
/// ([`crate::MeshDevice::with_wire`]), like its exchange scheme: two layouts over one mesh
/// never change each other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WirePrecision {
    /// In the tensor's own dtype: nothing is rounded.
    #[default]
    Native,
    /// Rounded to bfloat16 (8 exponent bits, f32's range): 2 bytes an element.
    Bf16,
    /// Rounded to IEEE half precision (5 exponent bits): 2 bytes an element.
    F16,
}

impl WirePrecision {
    /// Every precision, in CLI order.
    pub const ALL: [WirePrecision; 3] = [WirePrecision::Native, WirePrecision::Bf16, WirePrecision::F16];

    /// The CLI spelling: `f32` (a tensor's own dtype), `bf16`, `f16`.
    pub fn name(self) -> &'static str {
        match self {
            WirePrecision::Native => "f32",
            WirePrecision::Bf16 => "bf16",
            WirePrecision::F16 => "f16",
        }
    }

    /// The precision a CLI spelling names (`f32` and `native` both mean the tensor's own).
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "f32" | "native" => Ok(WirePrecision::Native),
            "bf16" => Ok(WirePrecision::Bf16),
            "f16" => Ok(WirePrecision::F16),
            other => Err(format!("unknown wire precision {other:?}: expected f32, bf16 or f16")),
        }
    }

    /// The dtype a float piece of `dtype` crosses in: the 16-bit type, for a float wider than
    /// it; the piece's own otherwise (ints, bools, and floats already 16 bits wide).
    pub fn on_wire(self, dtype: DType) -> DType {
        let target = match self {
            WirePrecision::Native => return dtype,
            WirePrecision::Bf16 => DType::BF16,
            WirePrecision::F16 => DType::F16,
        };
        match dtype {
            DType::F64 | DType::F32 | DType::Flex32 => target,
            other => other,
        }
    }
}

impl std::fmt::Display for WirePrecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wide_floats_are_rounded_and_names_round_trip() {
        assert_eq!(WirePrecision::Bf16.on_wire(DType::F32), DType::BF16);
        assert_eq!(WirePrecision::F16.on_wire(DType::F64), DType::F16);
        assert_eq!(WirePrecision::Bf16.on_wire(DType::I64), DType::I64);
        assert_eq!(WirePrecision::Native.on_wire(DType::F32), DType::F32);
        for w in WirePrecision::ALL {
            assert_eq!(WirePrecision::from_name(w.name()), Ok(w));
        }
        assert!(WirePrecision::from_name("fp8").unwrap_err().contains("bf16"));
    }
}
