//! What a checkpoint's record holds, read without building it: every tensor's path, parameter
//! id, shape and byte count, walked through the MessagePack encoding with the bytes skipped.
//! A checkpoint is checked against the network its state names before any tensor is made
//! ([`check_model_record`], [`check_optimizer_record`]): a state edited to name 10 million
//! classes, another tower count or another input side is one line naming the tensor and both
//! shapes, not an allocation that aborts or an assertion deep in a forward pass.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::OwtError;

/// One tensor of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTensor {
    /// Where it sits in the record: the module path ("fc6.weight") or, in an optimizer's
    /// record, the parameter id and the state's field.
    pub path: String,
    /// The parameter id it belongs to, where the record names one.
    pub id: Option<String>,
    /// Its shape.
    pub shape: Vec<usize>,
    /// The bytes of its values.
    pub bytes: usize,
}

impl RecordTensor {
    /// The values its shape names, when its bytes are not that many values of 2, 4 or 8
    /// bytes each (half, single or double precision).
    fn short_of_values(&self) -> Option<usize> {
        let values = self.shape.iter().product::<usize>();
        (![2, 4, 8].iter().any(|size| values * size == self.bytes)).then_some(values)
    }
}

/// Every tensor `record` (a record as owt's checkpoints encode it) holds, in record order.
pub fn record_tensors(record: &[u8]) -> Result<Vec<RecordTensor>, String> {
    let mut found = Vec::new();
    let mut de = rmp_serde::Deserializer::from_read_ref(record);
    Walk { path: Vec::new(), found: &mut found, depth: 0 }.deserialize(&mut de).map_err(|e| e.to_string())?;
    Ok(found)
}

/// A tensor's place in a model record as the architecture names it: "fc6.weight" for the
/// record's "item.fc6.weight.param".
fn module_path(path: &str) -> &str {
    let path = path.strip_prefix("item.").unwrap_or(path);
    path.strip_suffix(".param").unwrap_or(path)
}

/// The network in words, with what a state could have changed: "alexnet-small (input
/// 1x28x28, 10 classes, 2 towers)".
fn describe(arch: &owt_models::Architecture) -> String {
    let [c, h, w] = arch.input;
    format!("{} (input {c}x{h}x{w}, {} classes, {} tower(s))", arch.name, arch.classes, arch.towers)
}

/// Refuses a model record (the model section of the checkpoint `file`) that does not hold
/// exactly the parameters of `arch` (the network its state names) with their shapes, each
/// with the bytes its shape needs, in one line naming the tensor and both shapes. Returns
/// each parameter's shape by id, for [`check_optimizer_record`].
pub fn check_model_record(
    file: &Path,
    record: &[u8],
    arch: &owt_models::Architecture,
) -> Result<HashMap<String, (String, Vec<usize>)>, OwtError> {
    let bad = |what: String| OwtError::checkpoint(format!("{}: {what}", file.display()));
    let found = record_tensors(record).map_err(|e| bad(format!("its model record cannot be read: {e}")))?;
    let mut expected = arch.parameters()?;
    expected.extend(arch.buffers());
    let mut by_id = HashMap::new();
    for t in &found {
        let path = module_path(&t.path);
        let Some((_, shape)) = expected.iter().find(|(p, _)| p == path) else {
            return Err(bad(format!(
                "the model record holds {path} {:?}, which {} has not: the state names another network than the record holds",
                t.shape,
                describe(arch)
            )));
        };
        if &t.shape != shape {
            return Err(bad(format!(
                "{path} is {:?} in the model record, {} as its state names it needs {shape:?}",
                t.shape,
                describe(arch)
            )));
        }
        if let Some(values) = t.short_of_values() {
            return Err(bad(format!(
                "{path} {shape:?} holds {} bytes in the model record, not {values} values",
                t.bytes
            )));
        }
        if let Some(id) = &t.id {
            by_id.insert(id.clone(), (path.to_string(), shape.clone()));
        }
    }
    if let Some((path, shape)) = expected.iter().find(|(p, _)| !found.iter().any(|t| module_path(&t.path) == p)) {
        return Err(bad(format!("the model record has no {path} ({} has it, {shape:?})", describe(arch))));
    }
    Ok(by_id)
}

/// Refuses an optimizer record (momentum, by parameter id) whose tensors are not shaped as
/// the parameters of `params` (from [`check_model_record`]) they belong to, in one line. An
/// empty record (an import's: no state yet) holds nothing to check.
pub fn check_optimizer_record(
    file: &Path,
    record: &[u8],
    params: &HashMap<String, (String, Vec<usize>)>,
) -> Result<(), OwtError> {
    let bad = |what: String| OwtError::checkpoint(format!("{}: {what}", file.display()));
    if record.is_empty() {
        return Ok(());
    }
    let found = record_tensors(record).map_err(|e| bad(format!("its optimizer record cannot be read: {e}")))?;
    for t in found {
        let path = t.path.strip_prefix("item.").unwrap_or(&t.path);
        let id = path.split('.').next().unwrap_or_default();
        // State of a parameter the model no longer has (its weights replaced by hand) is
        // left unused, as Burn's optimizer leaves it.
        let Some((param, shape)) = params.get(id) else { continue };
        if &t.shape != shape {
            return Err(bad(format!("the optimizer's state of {param} is {:?}, the parameter is {shape:?}", t.shape)));
        }
        if let Some(values) = t.short_of_values() {
            return Err(bad(format!("the optimizer's state of {param} holds {} bytes, not {values} values", t.bytes)));
        }
    }
    Ok(())
}

/// How deep a record may nest: AlexNet's is 5 levels; a deeper one is not owt's (and the walk
/// recurses per level: a thousand nested arrays overflowed a test thread's 2 MB stack).
const MAX_DEPTH: usize = 32;

/// A value walked, with what it said if it is a tensor's fields.
#[derive(Default)]
struct Seen {
    shape: Option<Vec<usize>>,
    bytes: Option<usize>,
    id: Option<String>,
}

struct Walk<'a> {
    path: Vec<String>,
    found: &'a mut Vec<RecordTensor>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Seen;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Seen, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Seen;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(serde::de::Error::custom(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        let mut seen = Seen::default();
        let first = self.found.len();
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "shape" => seen.shape = Some(map.next_value::<Vec<usize>>()?),
                "bytes" => seen.bytes = Some(map.next_value::<Len>()?.0),
                "id" => seen.id = map.next_value::<Option<String>>()?,
                _ => {
                    let mut path = self.path.clone();
                    path.push(key.0);
                    map.next_value_seed(Walk { path, found: self.found, depth: self.depth + 1 })?;
                }
            }
        }
        if let (Some(shape), Some(bytes)) = (&seen.shape, seen.bytes) {
            self.found.push(RecordTensor { path: self.path.join("."), id: None, shape: shape.clone(), bytes });
        }
        // A parameter's id names the tensors found under it.
        if let Some(id) = &seen.id {
            for t in &mut self.found[first..] {
                t.id.get_or_insert_with(|| id.clone());
            }
        }
        Ok(seen)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seen, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(serde::de::Error::custom(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        let mut i = 0;
        loop {
            let mut path = self.path.clone();
            path.push(i.to_string());
            if seq.next_element_seed(Walk { path, found: self.found, depth: self.depth + 1 })?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(Seen::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Seen, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_none<E>(self) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_unit<E>(self) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Seen, E> {
        Ok(Seen::default())
    }

    fn visit_bytes<E>(self, _: &[u8]) -> Result<Seen, E> {
        Ok(Seen::default())
    }
}

/// A map key in words (records key by field names; an optimizer's by parameter ids).
struct Key(String);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                Ok(Key(s.to_string()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Key, E> {
                Ok(Key(n.to_string()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Key, E> {
                Ok(Key(n.to_string()))
            }
        }
        de.deserialize_any(V)
    }
}

/// The length of a byte string (or of a sequence of bytes), its values skipped.
struct Len(usize);

impl<'de> serde::Deserialize<'de> for Len {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Len;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, b: &[u8]) -> Result<Len, E> {
                Ok(Len(b.len()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Len, A::Error> {
                let mut n = 0;
                // Bytes, one by one (anything else, a nested array, is refused, not walked).
                while seq.next_element::<u8>()?.is_some() {
                    n += 1;
                }
                Ok(Len(n))
            }
        }
        de.deserialize_any(V)
    }
}
