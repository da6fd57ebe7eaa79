//! How pieces bound for another process are written into the one buffer sent to it: per
//! piece its key (the collective's order), its destination rank, its dtype, shape and bytes,
//! little-endian. Only host bytes cross processes (host-staged: read back, sent, uploaded).
//! A piece of a backend that holds no values (owt-meta's shape-only devices, on which dry
//! runs of meshes across nodes run) crosses as its dtype and shape alone: the same parcel,
//! counted alike, without reading back or sending bytes that would all be zeros.

use burn::tensor::{BoolStore, DType, Shape, TensorData};

/// One piece travelling between processes: `key` orders the pieces a rank receives in one
/// collective, `dst` is the global rank it is for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parcel {
    pub key: u64,
    pub dst: u64,
    pub data: Payload,
}

/// What a parcel carries of its piece.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    /// The piece's values.
    Values(TensorData),
    /// Only its dtype and shape: a piece of a backend that holds no values.
    ShapeOnly(DType, Shape),
}

/// The tag before a parcel's dtype: values follow its shape, or nothing does.
const VALUES: u8 = 0;
const SHAPE_ONLY: u8 = 1;

fn dtype_tag(dtype: DType) -> u8 {
    match dtype {
        DType::F64 => 0,
        DType::F32 => 1,
        DType::Flex32 => 2,
        DType::F16 => 3,
        DType::BF16 => 4,
        DType::I64 => 5,
        DType::I32 => 6,
        DType::I16 => 7,
        DType::I8 => 8,
        DType::U64 => 9,
        DType::U32 => 10,
        DType::U16 => 11,
        DType::U8 => 12,
        DType::Bool(BoolStore::Native) => 13,
        DType::Bool(BoolStore::U8) => 14,
        DType::Bool(BoolStore::U32) => 15,
        DType::QFloat(_) => panic!("Hybrid: quantized tensors do not cross processes (a {dtype:?} piece)"),
    }
}

fn dtype_of(tag: u8) -> DType {
    match tag {
        0 => DType::F64,
        1 => DType::F32,
        2 => DType::Flex32,
        3 => DType::F16,
        4 => DType::BF16,
        5 => DType::I64,
        6 => DType::I32,
        7 => DType::I16,
        8 => DType::I8,
        9 => DType::U64,
        10 => DType::U32,
        11 => DType::U16,
        12 => DType::U8,
        13 => DType::Bool(BoolStore::Native),
        14 => DType::Bool(BoolStore::U8),
        15 => DType::Bool(BoolStore::U32),
        other => panic!("Hybrid: a piece from another process has an unknown dtype tag {other}"),
    }
}

/// Appends `parcel` to `out`.
pub(crate) fn write(out: &mut Vec<u8>, parcel: &Parcel) {
    out.extend_from_slice(&parcel.key.to_le_bytes());
    out.extend_from_slice(&parcel.dst.to_le_bytes());
    let (tag, dtype, shape) = match &parcel.data {
        Payload::Values(data) => (VALUES, data.dtype, &data.shape),
        Payload::ShapeOnly(dtype, shape) => (SHAPE_ONLY, *dtype, shape),
    };
    out.push(tag);
    out.push(dtype_tag(dtype));
    out.push(u8::try_from(shape.num_dims()).expect("at most 255 dimensions"));
    for &d in shape.iter() {
        out.extend_from_slice(&(d as u64).to_le_bytes());
    }
    if let Payload::Values(data) = &parcel.data {
        let bytes = data.as_bytes();
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
}

/// Reads every parcel of a buffer written by [`write`].
pub(crate) fn read_all(buffer: &[u8]) -> Vec<Parcel> {
    let mut reader = Reader { buffer, at: 0 };
    let mut parcels = Vec::new();
    while reader.at < buffer.len() {
        let key = reader.u64();
        let dst = reader.u64();
        let tag = reader.take(1)[0];
        let dtype = dtype_of(reader.take(1)[0]);
        let dims = reader.take(1)[0] as usize;
        let shape = Shape::from((0..dims).map(|_| reader.u64() as usize).collect::<Vec<_>>());
        let data = match tag {
            VALUES => {
                let len = reader.u64() as usize;
                Payload::Values(TensorData::from_bytes_vec(reader.take(len).to_vec(), shape, dtype))
            }
            SHAPE_ONLY => Payload::ShapeOnly(dtype, shape),
            other => panic!("Hybrid: a piece from another process has an unknown payload tag {other}"),
        };
        parcels.push(Parcel { key, dst, data });
    }
    parcels
}

/// A cursor over a received buffer.
struct Reader<'a> {
    buffer: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let piece = self.buffer.get(self.at..self.at + n).unwrap_or_else(|| {
            panic!(
                "Hybrid: a buffer from another process ends early ({} bytes, needed {})",
                self.buffer.len(),
                self.at + n
            )
        });
        self.at += n;
        piece
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parcels_of_every_kind_come_back_as_written() {
        let values = |data| Payload::Values(data);
        let parcels = vec![
            Parcel { key: 3, dst: 1, data: values(TensorData::new(vec![1.5f32, -2.0, 0.25, 7.0, 8.0, 9.0], [2, 3])) },
            Parcel { key: 0, dst: 5, data: values(TensorData::new(vec![1.0f64 / 3.0], [1])) },
            Parcel { key: 9, dst: 2, data: values(TensorData::new(vec![-4i64, 5], [2])) },
            Parcel { key: 4, dst: 3, data: Payload::ShapeOnly(DType::BF16, Shape::new([4096, 9216])) },
            Parcel { key: 1, dst: 0, data: values(TensorData::new(vec![true, false, true], [3, 1])) },
            Parcel { key: 2, dst: 0, data: values(TensorData::new(Vec::<f32>::new(), [0, 4])) },
            Parcel { key: 5, dst: 1, data: Payload::ShapeOnly(DType::I64, Shape::new([0])) },
        ];
        let mut buffer = Vec::new();
        for p in &parcels {
            write(&mut buffer, p);
        }
        assert_eq!(read_all(&buffer), parcels);
        assert!(read_all(&[]).is_empty());
        // A shape-only piece costs its header alone, however large the shape.
        let mut shape_only = Vec::new();
        write(&mut shape_only, &parcels[3]);
        assert_eq!(shape_only.len(), 8 + 8 + 1 + 1 + 1 + 2 * 8);
    }
}
