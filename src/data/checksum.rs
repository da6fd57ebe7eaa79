//! The checksum a side file stored beside its data carries (`lighting.json`, a pack's index):
//! one place, so every such file is sealed and checked alike.

/// The CRC-32 of `value`'s JSON, computed by the caller without its own checksum field.
pub(crate) fn json_crc32<T: serde::Serialize>(value: &T) -> u32 {
    crc32fast::hash(&serde_json::to_vec(value).unwrap_or_default())
}
