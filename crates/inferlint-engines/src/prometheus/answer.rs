//! An answer of Prometheus' query API read typed, in one pass over its bytes: no tree of
//! JSON values is built. Each series is handed to a [`SeriesSink`] as soon as it is read,
//! its name and labels borrowed from the answer where they hold no escape, its points
//! `[t, "v"]` as numbers in a buffer reused from one series to the next; the sink keeps
//! what it needs (every series for a snapshot, the points inside the piece asked for a
//! range). What the API's JSON holds:
//!
//! ```json
//! {"status": "success", "data": {"resultType": "matrix", "result": [
//!   {"metric": {"__name__": "…", "instance": "…"}, "values": [[1764547200, "3"], …]}]}}
//! {"status": "error", "errorType": "bad_data", "error": "…"}
//! ```
//!
//! A vector's series hold one `"value"` instead of `"values"`; a scalar or a string result
//! holds no series. Keys the API may add (`warnings`, `infos`, a native histogram's
//! `histograms`) are passed over. Keys are read in any order; read in one pass, an answer
//! not in Prometheus' order (the status first, the result's type before the result) is
//! refused where what it holds could only be told at its end (a series with both `value`
//! and `values` before the type, series before a type that holds none, a refusal's
//! `data` that cannot be read before its status), and a key given twice that decides
//! what the sink is handed (`data`, `resultType`, `result`) is refused. A property test
//! holds the reader to a tree of the answer's JSON values: whatever it reads, the tree
//! reads the same.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Why an answer of the API could not be used. Each message reads after "failed to".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The server answered `"status": "error"` (`bad_data`, `timeout`, `execution`).
    #[error("the Prometheus server refused the query ({kind}): {message}")]
    Refused {
        /// The API's `errorType`.
        kind: String,
        /// The API's `error`.
        message: String,
    },
    /// An answer that is not the API's JSON.
    #[error("the answer is not a Prometheus API answer: {0}")]
    Shape(String),
}

/// One series of an answer: its labels (without `__name__`), its name, and its points
/// as (Unix seconds, value).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiSeries {
    /// The metric's name (`__name__`).
    pub name: String,
    /// The other labels, sorted by name.
    pub labels: Vec<(String, String)>,
    /// (Unix seconds, value), in time order.
    pub points: Vec<(f64, f64)>,
}

impl ApiSeries {
    /// The value of a label, if the series has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The replica this series belongs to: its `pod`, else its `instance`.
    pub fn replica(&self) -> Option<&str> {
        self.label("pod").or_else(|| self.label("instance"))
    }
}

/// Reads a value as the API writes it: a string holding a number, `NaN`, `+Inf` or
/// `-Inf`.
pub fn parse_value(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        other => other.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

/// One series as the reader hands it over: borrowed from the answer and the reader's
/// buffers, valid for the call only.
#[derive(Debug, Clone, Copy)]
pub struct RawSeries<'a> {
    /// `__name__` (empty when the series has none).
    pub name: &'a str,
    /// The other labels, sorted by name.
    pub labels: &'a [(Cow<'a, str>, Cow<'a, str>)],
    /// (Unix seconds, value), in the answer's order.
    pub points: &'a [(f64, f64)],
}

impl<'a> RawSeries<'a> {
    /// The value of a label, if the series has it.
    pub fn label(&self, name: &str) -> Option<&'a str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| match v {
                Cow::Borrowed(b) => *b,
                Cow::Owned(o) => o.as_str(),
            })
    }

    /// The replica this series belongs to: its `pod`, else its `instance`.
    pub fn replica(&self) -> Option<&'a str> {
        self.label("pod").or_else(|| self.label("instance"))
    }
}

/// What the reader hands each series of an answer to, in the answer's order.
pub trait SeriesSink {
    /// One series, read whole.
    fn series(&mut self, series: RawSeries<'_>);
}

/// A sink that keeps every series whole: what a snapshot or the scrape interval reads.
#[derive(Debug, Default)]
pub struct Collect(pub Vec<ApiSeries>);

impl SeriesSink for Collect {
    fn series(&mut self, s: RawSeries<'_>) {
        self.0.push(ApiSeries {
            name: s.name.to_owned(),
            labels: s
                .labels
                .iter()
                .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
                .collect(),
            points: s.points.to_vec(),
        });
    }
}

/// Reads an answer of `/api/v1/query` or `/api/v1/query_range`: a vector (one point per
/// series), a matrix (many) or a scalar (no series) become series with points.
pub fn parse_answer(body: &[u8]) -> Result<Vec<ApiSeries>, ApiError> {
    let mut all = Collect::default();
    read_answer(body, &mut all)?;
    Ok(all.0)
}

/// Reads an answer, handing each of its series to `sink` as it is read. On an error the
/// sink may hold series of the answer already: the caller drops them.
pub fn read_answer(body: &[u8], sink: &mut impl SeriesSink) -> Result<(), ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let outcome = AnswerSeed { sink }
        .deserialize(&mut de)
        .and_then(|outcome| de.end().map(|()| outcome))
        .map_err(|e| shape(&e, body))?;
    match outcome {
        Outcome::Read => Ok(()),
        Outcome::Refused { kind, message } => Err(ApiError::Refused { kind, message }),
        Outcome::Shape(what) => Err(ApiError::Shape(what)),
    }
}

/// A reading error as one line: what was wrong and where; for text that is no JSON at
/// all, how the answer starts.
fn shape(e: &serde_json::Error, body: &[u8]) -> ApiError {
    match e.classify() {
        serde_json::error::Category::Data => ApiError::Shape(e.to_string()),
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(80)]).into_owned();
            ApiError::Shape(format!("{e} (it starts {text:?})"))
        }
    }
}

/// What a whole answer said, past the series already handed over.
enum Outcome {
    Read,
    Refused { kind: String, message: String },
    Shape(String),
}

/// A string borrowed from the answer where it holds no escape.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field that should be a string; anything else reads as none (as an absent field).
struct Loose<'de>(Option<Cow<'de, str>>);

impl<'de> de::Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl Loose<'_> {
    fn into_string(self) -> Option<String> {
        self.0.map(Cow::into_owned)
    }
}

struct AnswerSeed<'s, S> {
    sink: &'s mut S,
}

impl<'de, S: SeriesSink> DeserializeSeed<'de> for AnswerSeed<'_, S> {
    type Value = Outcome;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Outcome, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: SeriesSink> Visitor<'de> for AnswerSeed<'_, S> {
    type Value = Outcome;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Prometheus API answer (an object with \"status\")")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outcome, A::Error> {
        let mut status: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut error: Option<String> = None;
        let mut data: Option<Data> = None;
        let mut buffers = Buffers::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.0.as_ref() {
                "status" => status = map.next_value::<Loose<'de>>()?.into_string(),
                "errorType" => kind = map.next_value::<Loose<'de>>()?.into_string(),
                "error" => error = map.next_value::<Loose<'de>>()?.into_string(),
                // A second `data` would hand the sink a second set of series.
                "data" if data.is_some() => return Err(de::Error::duplicate_field("data")),
                // A refusal says why; what it holds besides is not read (Prometheus writes
                // the status first).
                "data" if status.as_deref() == Some("error") => {
                    map.next_value::<IgnoredAny>()?;
                }
                "data" => {
                    data = Some(map.next_value_seed(DataSeed {
                        sink: &mut *self.sink,
                        buffers: &mut buffers,
                    })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match status.as_deref() {
            Some("error") => {
                return Ok(Outcome::Refused {
                    kind: kind.unwrap_or_else(|| "unknown".into()),
                    message: error.unwrap_or_else(|| "no reason given".into()),
                })
            }
            Some("success") => {}
            _ => return Ok(Outcome::Shape("no \"status\": \"success\"".into())),
        }
        let Some(data) = data else {
            return Ok(Outcome::Shape("no \"data\"".into()));
        };
        let no_result = || Outcome::Shape("\"data\" holds no vector or matrix result".into());
        Ok(match (data.kind.as_deref(), data.result) {
            // Series read before a type that holds none: the answer contradicts itself.
            (Some(kind @ ("scalar" | "string")), Some(seen)) if seen.series > 0 => {
                Outcome::Shape(format!("a {kind} result holds series"))
            }
            (Some("scalar" | "string"), _) => Outcome::Read,
            (Some("vector"), Some(seen)) if seen.without_value == 0 => Outcome::Read,
            (Some("matrix"), Some(seen)) if seen.without_values == 0 => Outcome::Read,
            // A result read before its type, whose series lacked what the type needs.
            (Some("vector"), Some(_)) => {
                Outcome::Shape("a series of a vector has no \"value\"".into())
            }
            (Some("matrix"), Some(_)) => {
                Outcome::Shape("a series of a matrix has no \"values\"".into())
            }
            _ => no_result(),
        })
    }
}

/// The buffers one series is read into, reused from one series to the next.
#[derive(Default)]
struct Buffers {
    /// A matrix series' `values`.
    points: Vec<(f64, f64)>,
    /// A vector series' `value`.
    one: Vec<(f64, f64)>,
}

/// What `data` held: its type, and whether its result was a list of series (with how
/// many lacked a vector's `value` or a matrix's `values`).
struct Data {
    kind: Option<String>,
    result: Option<Seen>,
}

#[derive(Clone, Copy, Default)]
struct Seen {
    series: u64,
    without_value: u64,
    without_values: u64,
}

/// The type a result has, where `resultType` came before it (as Prometheus writes it).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Vector,
    Matrix,
    Unknown,
}

struct DataSeed<'s, S> {
    sink: &'s mut S,
    buffers: &'s mut Buffers,
}

impl<'de, S: SeriesSink> DeserializeSeed<'de> for DataSeed<'_, S> {
    type Value = Data;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: SeriesSink> Visitor<'de> for DataSeed<'_, S> {
    type Value = Data;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"data\" as an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
        let mut kind: Option<String> = None;
        let mut kind_read = false;
        let mut result_read = false;
        let mut result: Option<Seen> = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            // The type decides how the result is read, and the sink has its series: a
            // second of either would make the answer mean two things.
            match key.0.as_ref() {
                "resultType" if kind_read => return Err(de::Error::duplicate_field("resultType")),
                "result" if result_read => return Err(de::Error::duplicate_field("result")),
                "resultType" => {
                    kind_read = true;
                    kind = map.next_value::<Loose<'de>>()?.into_string();
                }
                "result" => match kind.as_deref() {
                    Some("scalar" | "string") => {
                        result_read = true;
                        map.next_value::<IgnoredAny>()?;
                    }
                    known => {
                        let kind = match known {
                            Some("vector") => Kind::Vector,
                            Some("matrix") => Kind::Matrix,
                            _ => Kind::Unknown,
                        };
                        result_read = true;
                        result = map.next_value_seed(ResultSeed {
                            sink: &mut *self.sink,
                            buffers: &mut *self.buffers,
                            kind,
                        })?;
                    }
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Data { kind, result })
    }

    // Anything but an object holds no result.
    fn visit_unit<E: de::Error>(self) -> Result<Data, E> {
        Ok(Data {
            kind: None,
            result: None,
        })
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Data, E> {
        self.visit_unit()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Data, E> {
        self.visit_unit()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Data, E> {
        self.visit_unit()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Data, E> {
        self.visit_unit()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Data, E> {
        self.visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.visit_unit()
    }
}

/// The result: a list of series, each handed to the sink; anything else is no result.
struct ResultSeed<'s, S> {
    sink: &'s mut S,
    buffers: &'s mut Buffers,
    kind: Kind,
}

impl<'de, S: SeriesSink> DeserializeSeed<'de> for ResultSeed<'_, S> {
    type Value = Option<Seen>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Seen>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: SeriesSink> Visitor<'de> for ResultSeed<'_, S> {
    type Value = Option<Seen>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of series")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Seen>, A::Error> {
        let mut seen = Seen::default();
        let mut labels: Vec<(Cow<'de, str>, Cow<'de, str>)> = Vec::new();
        while let Some(found) = seq.next_element_seed(SeriesSeed {
            labels: &mut labels,
            points: &mut self.buffers.points,
            one: &mut self.buffers.one,
            kind: self.kind,
        })? {
            seen.series += 1;
            if !found.value {
                seen.without_value += 1;
            }
            if !found.values {
                seen.without_values += 1;
            }
            // A vector's series has its one point in `value`, a matrix's in `values`; a
            // series read before the result's type counts `values` where it has them.
            let one = match self.kind {
                Kind::Vector => true,
                Kind::Matrix => false,
                Kind::Unknown => !found.values,
            };
            self.sink.series(RawSeries {
                name: found.name.as_deref().unwrap_or(""),
                labels: &labels,
                points: if one {
                    &self.buffers.one
                } else {
                    &self.buffers.points
                },
            });
        }
        Ok(Some(seen))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<Seen>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Seen>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// What one series held, past its labels and points (in the seed's buffers).
struct Found<'de> {
    name: Option<Cow<'de, str>>,
    value: bool,
    values: bool,
}

struct SeriesSeed<'s, 'de> {
    labels: &'s mut Vec<(Cow<'de, str>, Cow<'de, str>)>,
    points: &'s mut Vec<(f64, f64)>,
    one: &'s mut Vec<(f64, f64)>,
    kind: Kind,
}

impl<'de> DeserializeSeed<'de> for SeriesSeed<'_, 'de> {
    type Value = Found<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Found<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SeriesSeed<'_, 'de> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a series (an object with \"metric\" and \"values\" or \"value\")")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        self.labels.clear();
        self.points.clear();
        self.one.clear();
        let mut found = Found {
            name: None,
            value: false,
            values: false,
        };
        let mut metric = false;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.0.as_ref() {
                "metric" => {
                    self.labels.clear();
                    found.name = map.next_value_seed(LabelsSeed {
                        labels: &mut *self.labels,
                    })?;
                    metric = true;
                }
                // The key the result's type does not read is passed over, as it holds
                // nothing of the answer.
                "value" if self.kind == Kind::Matrix => {
                    map.next_value::<IgnoredAny>()?;
                }
                "values" if self.kind == Kind::Vector => {
                    map.next_value::<IgnoredAny>()?;
                }
                "value" => {
                    self.one.clear();
                    map.next_value_seed(PointSeed {
                        points: &mut *self.one,
                    })?;
                    found.value = true;
                }
                "values" => {
                    self.points.clear();
                    map.next_value_seed(PointsSeed {
                        points: &mut *self.points,
                    })?;
                    found.values = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !metric {
            return Err(de::Error::custom("a series has no \"metric\" labels"));
        }
        match self.kind {
            Kind::Vector if !found.value => {
                Err(de::Error::custom("a series of a vector has no \"value\""))
            }
            Kind::Matrix if !found.values => {
                Err(de::Error::custom("a series of a matrix has no \"values\""))
            }
            Kind::Unknown if !found.value && !found.values => {
                Err(de::Error::custom("a series has no \"value\" or \"values\""))
            }
            // Before the result's type, which of the two counts cannot be told.
            Kind::Unknown if found.value && found.values => Err(de::Error::custom(
                "a series has both \"value\" and \"values\" before the result's type",
            )),
            _ => {
                self.labels.sort();
                Ok(found)
            }
        }
    }
}

/// `metric`: every label a string; `__name__` apart, the others into the buffer.
struct LabelsSeed<'s, 'de> {
    labels: &'s mut Vec<(Cow<'de, str>, Cow<'de, str>)>,
}

impl<'de> DeserializeSeed<'de> for LabelsSeed<'_, 'de> {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed<'_, 'de> {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a series' \"metric\" labels (an object of strings)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let value = map
                .next_value::<Loose<'de>>()?
                .0
                .ok_or_else(|| de::Error::custom("a series label is not a string"))?;
            if key.0 == "__name__" {
                name = Some(value);
            } else {
                self.labels.push((key.0, value));
            }
        }
        Ok(name)
    }
}

/// A matrix series' `values`: a list of points.
struct PointsSeed<'s> {
    points: &'s mut Vec<(f64, f64)>,
}

impl<'de> DeserializeSeed<'de> for PointsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PointsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a matrix series' \"values\" (a list of [time, \"value\"])")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Some(n) = seq.size_hint() {
            self.points.reserve(n);
        }
        while seq
            .next_element_seed(PointSeed {
                points: &mut *self.points,
            })?
            .is_some()
        {}
        Ok(())
    }
}

/// One point `[t, "v"]`: the time a number of seconds, the value a string the API
/// writes ([`parse_value`]).
struct PointSeed<'s> {
    points: &'s mut Vec<(f64, f64)>,
}

impl<'de> DeserializeSeed<'de> for PointSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

const NOT_A_POINT: &str = "a series point is not [time, \"value\"]";

impl<'de> Visitor<'de> for PointSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a series point [time, \"value\"]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let t = seq
            .next_element_seed(TimeSeed)?
            .ok_or_else(|| de::Error::custom(NOT_A_POINT))?;
        let v = seq
            .next_element_seed(ValueSeed)?
            .ok_or_else(|| de::Error::custom(NOT_A_POINT))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(NOT_A_POINT));
        }
        self.points.push((t, v));
        Ok(())
    }
}

/// A point's time: a JSON number of seconds.
struct TimeSeed;

impl<'de> DeserializeSeed<'de> for TimeSeed {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_f64(self)
    }
}

impl<'de> Visitor<'de> for TimeSeed {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a series point's time (a number of seconds)")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
}

/// A point's value: a string holding a number, `NaN`, `+Inf` or `-Inf`.
struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a series value as the API writes it (a string: a number, NaN, +Inf, -Inf)")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        parse_value(v).ok_or_else(|| E::custom(format!("a series value {v:?} is not a number")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The answer read as a tree of JSON values, as it was read before the typed reader:
    /// the oracle the typed reader is held to.
    fn by_tree(body: &[u8]) -> Result<Vec<ApiSeries>, ApiError> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| ApiError::Shape(e.to_string()))?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        match value.get("status").and_then(Value::as_str) {
            Some("error") => {
                return Err(ApiError::Refused {
                    kind: text(value.get("errorType")).unwrap_or_else(|| "unknown".into()),
                    message: text(value.get("error")).unwrap_or_else(|| "no reason given".into()),
                })
            }
            Some("success") => {}
            _ => return Err(ApiError::Shape("status".into())),
        }
        let data = value.get("data").ok_or(ApiError::Shape("data".into()))?;
        let bad = || ApiError::Shape("series".into());
        let items = match (
            data.get("resultType").and_then(Value::as_str),
            data.get("result"),
        ) {
            (Some("scalar" | "string"), _) => return Ok(Vec::new()),
            (Some(kind @ ("vector" | "matrix")), Some(Value::Array(items))) => {
                items.iter().map(move |i| (kind == "matrix", i))
            }
            _ => return Err(ApiError::Shape("result".into())),
        };
        let point = |p: &Value| -> Result<(f64, f64), ApiError> {
            let pair = p.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
            let t = pair[0].as_f64().ok_or_else(bad)?;
            let v = pair[1].as_str().and_then(parse_value).ok_or_else(bad)?;
            Ok((t, v))
        };
        items
            .map(|(matrix, item)| {
                let metric = item
                    .get("metric")
                    .and_then(Value::as_object)
                    .ok_or_else(bad)?;
                let mut name = String::new();
                let mut labels = Vec::new();
                for (k, v) in metric {
                    let v = v.as_str().ok_or_else(bad)?.to_owned();
                    if k == "__name__" {
                        name = v;
                    } else {
                        labels.push((k.clone(), v));
                    }
                }
                labels.sort();
                let points = if matrix {
                    let values = item
                        .get("values")
                        .and_then(Value::as_array)
                        .ok_or_else(bad)?;
                    values.iter().map(point).collect::<Result<Vec<_>, _>>()?
                } else {
                    vec![point(item.get("value").ok_or_else(bad)?)?]
                };
                Ok(ApiSeries {
                    name,
                    labels,
                    points,
                })
            })
            .collect()
    }

    /// Two readings agree: the same series, the same points (NaN as NaN), or the same
    /// kind of refusal.
    fn agree(
        typed: &Result<Vec<ApiSeries>, ApiError>,
        tree: &Result<Vec<ApiSeries>, ApiError>,
    ) -> bool {
        match (typed, tree) {
            (Ok(a), Ok(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(a, b)| {
                        a.name == b.name
                            && a.labels == b.labels
                            && a.points.len() == b.points.len()
                            && a.points.iter().zip(&b.points).all(|(p, q)| {
                                p.0 == q.0 && (p.1 == q.1 || (p.1.is_nan() && q.1.is_nan()))
                            })
                    })
            }
            (Err(ApiError::Refused { .. }), Err(ApiError::Refused { .. })) => typed == tree,
            (Err(ApiError::Shape(_)), Err(ApiError::Shape(_))) => true,
            _ => false,
        }
    }

    /// A label or a name: plain, or with what JSON must escape, or beyond ASCII.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_:]{1,12}",
            "[a-z\\\\\"<>&\n\u{7f}\u{e9}\u{2028}-]{0,8}",
        ]
    }

    /// A value as the API writes it, or as it does not.
    fn value_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<f64>()
                .prop_filter("finite", |v| v.is_finite())
                .prop_map(|v| v.to_string()),
            (0u32..100_000).prop_map(|v| v.to_string()),
            Just("NaN".to_owned()),
            Just("+Inf".to_owned()),
            Just("-Inf".to_owned()),
            Just("inf".to_owned()),
            Just("1e999".to_owned()),
            Just("".to_owned()),
        ]
    }

    /// A generated series: its name (or none), its labels, its points as (time, value text).
    type Generated = (Option<String>, Vec<(String, String)>, Vec<(f64, String)>);

    fn series() -> impl Strategy<Value = Generated> {
        (
            prop::option::of(text()),
            prop::collection::vec((text(), text()), 0..4),
            prop::collection::vec(
                (
                    prop_oneof![
                        (0u64..2_000_000_000).prop_map(|t| t as f64),
                        (0u64..2_000_000_000_000).prop_map(|t| t as f64 / 1000.0)
                    ],
                    value_text(),
                ),
                0..5,
            ),
        )
    }

    proptest! {
        /// Whatever the answer holds, in whatever order its keys come, the typed reader
        /// reads what a tree of its JSON values holds, or refuses as the tree does.
        #[test]
        fn the_typed_reader_reads_what_the_tree_holds(
            kind in prop::sample::select(vec!["matrix", "vector", "scalar", "string", "other"]),
            status in prop::sample::select(vec!["success", "error", "warning"]),
            items in prop::collection::vec(series(), 0..4),
            type_first in any::<bool>(),
            metric_first in any::<bool>(),
            status_first in any::<bool>(),
            extra in any::<bool>(),
            one_point in any::<bool>(),
            both in any::<bool>(),
        ) {
            let series: Vec<String> = items
                .iter()
                .map(|(name, labels, points)| {
                    let mut metric = serde_json::Map::new();
                    if let Some(name) = name {
                        metric.insert("__name__".into(), json!(name));
                    }
                    for (k, v) in labels {
                        metric.insert(k.clone(), json!(v));
                    }
                    let points: Vec<Value> = points.iter().map(|(t, v)| json!([t, v])).collect();
                    let items_points = points.clone();
                    let (key, points) = match (kind, one_point) {
                        ("vector", true) => ("value", points.first().cloned().unwrap_or(json!([]))),
                        ("vector", false) => ("values", Value::Array(points)),
                        (_, true) => ("value", points.first().cloned().unwrap_or(json!([]))),
                        _ => ("values", Value::Array(points)),
                    };
                    let metric = format!("\"metric\":{}", Value::Object(metric));
                    let mut points = format!("\"{key}\":{points}");
                    if both {
                        // Both keys, the one the type does not read last.
                        let first = items_points.first().cloned().unwrap_or(json!([]));
                        let all = Value::Array(items_points.clone());
                        points = if key == "value" {
                            format!("{points},\"values\":{all}")
                        } else {
                            format!("{points},\"value\":{first}")
                        };
                    }
                    if metric_first {
                        format!("{{{metric},{points}}}")
                    } else {
                        format!("{{{points},{metric}}}")
                    }
                })
                .collect();
            let result = format!("\"result\":[{}]", series.join(","));
            let kind_text = format!("\"resultType\":\"{kind}\"");
            let data = if type_first {
                format!("{{{kind_text},{result}}}")
            } else {
                format!("{{{result},{kind_text}}}")
            };
            let mut fields = vec![
                format!("\"data\":{data}"),
                "\"errorType\":\"bad_data\"".to_owned(),
                "\"error\":\"no\"".to_owned(),
            ];
            if extra {
                fields.push("\"warnings\":[\"w\",{\"x\":[1,[2]]}]".to_owned());
            }
            let status_field = format!("\"status\":\"{status}\"");
            if status_first {
                fields.insert(0, status_field);
            } else {
                fields.push(status_field);
            }
            let body = format!("{{{}}}", fields.join(","));
            let typed = parse_answer(body.as_bytes());
            let tree = by_tree(body.as_bytes());
            // Read in one pass, an answer not in Prometheus' order (the status first, the
            // result's type before the result) can hold something the typed reader meets
            // before it knows it does not matter (series before a type that holds none, a
            // key the type does not read, the wrong series of a refusal): it may refuse
            // such an answer where the tree reads it; whatever it reads, the tree reads.
            let out_of_order = !type_first || (status == "error" && !status_first);
            let typed_shape = matches!(typed, Err(ApiError::Shape(_)));
            prop_assert!(
                agree(&typed, &tree) || (out_of_order && typed_shape),
                "{body}\ntyped: {typed:?}\ntree: {tree:?}"
            );
        }

        /// Bytes that are not an answer, cut anywhere: one line, never a panic.
        #[test]
        fn any_cut_of_an_answer_is_one_line(cut in 0usize..400) {
            let body = br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","instance":"a\"b"},"values":[[1764547200.5,"1"],[1764547201,"NaN"]]},{"metric":{},"values":[[1,"+Inf"]]}]}}"#;
            let cut = &body[..cut.min(body.len())];
            match parse_answer(cut) {
                Ok(_) => prop_assert_eq!(cut.len(), body.len()),
                Err(e) => prop_assert!(!e.to_string().contains('\n')),
            }
        }
    }

    fn shape_of(body: &[u8]) -> String {
        match parse_answer(body) {
            Err(ApiError::Shape(what)) => what,
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    /// Every way an answer can be wrong is one line naming what is wrong, never a panic
    /// and never series read from a part of it.
    #[test]
    fn wrong_answers_are_one_line_each() {
        let matrix = |result: &str| {
            format!(r#"{{"status":"success","data":{{"resultType":"matrix","result":{result}}}}}"#)
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"<html>".to_vec(), "(it starts \"<html>\")"),
            (b"".to_vec(), "EOF"),
            (
                br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"#.to_vec(),
                "EOF",
            ),
            (b"{}".to_vec(), "no \"status\": \"success\""),
            (br#"{"status":"success"}"#.to_vec(), "no \"data\""),
            (
                br#"{"status":"success","data":{"resultType":"matrix"}}"#.to_vec(),
                "\"data\" holds no vector or matrix result",
            ),
            (
                br#"{"status":"success","data":{"resultType":"matrix","result":null}}"#.to_vec(),
                "\"data\" holds no vector or matrix result",
            ),
            (
                br#"{"status":"success","data":{"resultType":"histogram","result":[]}}"#.to_vec(),
                "\"data\" holds no vector or matrix result",
            ),
            (matrix(r#"[{"values":[]}]"#).into_bytes(), "a series has no \"metric\" labels"),
            (matrix(r#"[{"metric":{}}]"#).into_bytes(), "a series of a matrix has no \"values\""),
            (
                matrix(r#"[{"metric":{"a":1},"values":[]}]"#).into_bytes(),
                "a series label is not a string",
            ),
            (
                matrix(r#"[{"metric":{},"values":[[1,"oops"]]}]"#).into_bytes(),
                "a series value \"oops\" is not a number",
            ),
            // The API writes +Inf; a value that overflows is no reading it would write.
            (
                matrix(r#"[{"metric":{},"values":[[1,"1e999"]]}]"#).into_bytes(),
                "a series value \"1e999\" is not a number",
            ),
            (
                matrix(r#"[{"metric":{},"values":[[1,"inf"]]}]"#).into_bytes(),
                "a series value \"inf\" is not a number",
            ),
            (
                matrix(r#"[{"metric":{},"values":[[1,3]]}]"#).into_bytes(),
                "expected a series value as the API writes it",
            ),
            (
                matrix(r#"[{"metric":{},"values":[["1","3"]]}]"#).into_bytes(),
                "expected a series point's time",
            ),
            (
                matrix(r#"[{"metric":{},"values":[[1]]}]"#).into_bytes(),
                NOT_A_POINT,
            ),
            (
                matrix(r#"[{"metric":{},"values":[[1,"2",3]]}]"#).into_bytes(),
                NOT_A_POINT,
            ),
            (
                matrix(r#"[{"metric":{},"values":[{"t":1}]}]"#).into_bytes(),
                "expected a series point [time, \"value\"]",
            ),
            (
                br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"values":[[1,"1"]]}]}}"#.to_vec(),
                "a series of a vector has no \"value\"",
            ),
            (
                br#"{"status":"success","data":{"result":[{"metric":{},"values":[[1,"1"]]}],"resultType":"vector"}}"#.to_vec(),
                "a series of a vector has no \"value\"",
            ),
            (
                format!("{} trailing", matrix("[]")).into_bytes(),
                "trailing characters",
            ),
        ];
        for (body, expected) in cases {
            let what = shape_of(&body);
            assert!(
                what.contains(expected),
                "{:?}: {what:?} should say {expected:?}",
                String::from_utf8_lossy(&body)
            );
            assert!(!what.contains('\n'), "{what:?}");
        }
    }

    /// The API's error answer is a refusal with its type and reason, whatever else it
    /// holds and in whatever order; fields that are not strings read as absent.
    #[test]
    fn refusals_are_read_in_any_order() {
        let e = parse_answer(
            br#"{"error":"query timed out","data":{"resultType":"matrix","result":[]},"errorType":"timeout","status":"error"}"#,
        );
        assert_eq!(
            e,
            Err(ApiError::Refused {
                kind: "timeout".into(),
                message: "query timed out".into()
            })
        );
        let bare = parse_answer(br#"{"status":"error","errorType":null}"#);
        assert_eq!(
            bare,
            Err(ApiError::Refused {
                kind: "unknown".into(),
                message: "no reason given".into()
            })
        );
    }

    /// Keys in another order than Prometheus writes them, keys it may add, escapes in
    /// labels and a scalar result: read as the API means them.
    #[test]
    fn keys_in_any_order_escapes_and_extra_fields() {
        let body = br#"{"data":{"result":[{"values":[[1.5,"2"],[2,"NaN"]],"histograms":[],"metric":{"pod":"p\u002d0","__name__":"x","a":"\"q\""}}],"resultType":"matrix"},"warnings":["w"],"status":"success"}"#;
        let series = parse_answer(body).expect("reads");
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].name, "x");
        assert_eq!(
            series[0].labels,
            vec![("a".into(), "\"q\"".into()), ("pod".into(), "p-0".into())]
        );
        assert_eq!(series[0].replica(), Some("p-0"));
        assert_eq!(series[0].points[0], (1.5, 2.0));
        assert!(series[0].points[1].1.is_nan());
        let scalar = br#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#;
        assert_eq!(parse_answer(scalar), Ok(Vec::new()));
    }

    /// A sink sees each series once, in the answer's order, with its own points only.
    #[test]
    fn a_sink_sees_each_series_with_its_own_points() {
        struct Count(Vec<(String, Option<String>, usize)>);
        impl SeriesSink for Count {
            fn series(&mut self, s: RawSeries<'_>) {
                self.0.push((
                    s.name.to_owned(),
                    s.replica().map(str::to_owned),
                    s.points.len(),
                ));
            }
        }
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"a","instance":"i:1"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
            {"metric":{"__name__":"b","pod":"p","instance":"i:2"},"values":[[1,"1"]]}]}}"#;
        let mut count = Count(Vec::new());
        read_answer(body, &mut count).expect("reads");
        assert_eq!(
            count.0,
            vec![
                ("a".into(), Some("i:1".into()), 3),
                ("b".into(), Some("p".into()), 1)
            ]
        );
    }
}
