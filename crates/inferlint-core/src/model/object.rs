//! A JSON object that keeps its keys in order: the shape of every result's evidence and
//! of each line of the files whose key order is part of their format.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

/// A JSON object that keeps its keys in the order they were inserted (or read), whatever
/// features `serde_json` was built with: its own map keeps insertion order only under
/// `preserve_order`, which this crate does not force on its users. The `--json` results'
/// evidence, the series file's lines and every other shape whose key order is part of a
/// format are built with it. A value that is itself an object (a nested record) has its
/// keys in `serde_json`'s order: alphabetical unless a crate turns that feature on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonObject(Vec<(String, Value)>);

impl JsonObject {
    /// An empty object.
    pub fn new() -> JsonObject {
        JsonObject(Vec::new())
    }

    /// Sets `key` to `value`: in place when the key is there, else at the end.
    pub fn insert(&mut self, key: String, value: Value) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((key, value)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The keys and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The object as a `serde_json` value (in `serde_json`'s key order).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.iter().cloned().collect())
    }
}

/// An object from its entries, in order: `JsonObject::from([("a", json!(1)), ...])`.
impl<const N: usize> From<[(&str, Value); N]> for JsonObject {
    fn from(entries: [(&str, Value); N]) -> JsonObject {
        entries
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect()
    }
}

/// `object["key"]`: the value, or `null` when the key is not there (as indexing a
/// `serde_json::Value` does).
impl std::ops::Index<&str> for JsonObject {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(key).unwrap_or(&NULL)
    }
}

impl Extend<(String, Value)> for JsonObject {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, entries: I) {
        for (key, value) in entries {
            self.insert(key, value);
        }
    }
}

impl FromIterator<(String, Value)> for JsonObject {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> JsonObject {
        let mut object = JsonObject::new();
        object.extend(entries);
        object
    }
}

impl IntoIterator for JsonObject {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a JsonObject {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl Serialize for JsonObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Reads a JSON object keeping its keys in the order the text has them, which is how a
/// caller can walk any serialised struct's fields in their declared order.
impl<'de> Deserialize<'de> for JsonObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JsonObject, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = JsonObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonObject, A::Error> {
                let mut object = JsonObject::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    object.insert(key, value);
                }
                Ok(object)
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}
