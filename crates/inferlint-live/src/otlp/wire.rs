//! An OTLP export as each transport carries it, and what the receiver answers: the gRPC
//! message frame (a compressed flag and a big-endian length before the message), the
//! compressions the OpenTelemetry exporters use, the size bound, and each refusal with
//! its gRPC status and HTTP status. Plain functions of bytes, without a network.

use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// The largest export request received: 4 MiB, the default bound of gRPC's servers and of
/// the OpenTelemetry Collector's gRPC receiver, counted on the message itself (after
/// decompression) and on the bytes sent. A vLLM batch of 512 spans (its exporter's
/// largest) is about 400 KB.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// The gRPC method an exporter calls (`TraceService.Export` of
/// `opentelemetry/proto/collector/trace/v1/trace_service.proto`).
pub const GRPC_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The path OTLP/HTTP sends traces to.
pub const HTTP_PATH: &str = "/v1/traces";

/// The compressions accepted, as gRPC's `grpc-accept-encoding` and HTTP's
/// `Accept-Encoding` name them.
pub const ACCEPTED_ENCODINGS: &str = "identity, gzip, deflate";

/// The gRPC status codes the receiver answers with (`grpc/doc/statuscodes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcCode {
    /// 0: received and written.
    Ok = 0,
    /// 3: the message is not an export request.
    InvalidArgument = 3,
    /// 4: the body did not arrive in time.
    DeadlineExceeded = 4,
    /// 8: the message is larger than the bound.
    ResourceExhausted = 8,
    /// 12: a method or a compression not served here.
    Unimplemented = 12,
    /// 13: the frame itself is broken.
    Internal = 13,
    /// 14: received, but the file could not be written; the exporter may send it again.
    Unavailable = 14,
}

/// Why a request was not written, with what each transport answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// More than [`MAX_MESSAGE_BYTES`], sent or once decompressed.
    TooLarge,
    /// A compression not served here (`zstd`, `snappy`, `br`).
    Compression(String),
    /// A gRPC frame that is not one whole message (cut short, two messages, none, a
    /// compressed flag without a compression named).
    BrokenFrame(String),
    /// Bytes that do not decode as an `ExportTraceServiceRequest`, or do not inflate.
    NotOtlp(String),
    /// The body did not end within the deadline (a client that stalls).
    Stalled,
    /// Another method than `POST`.
    Method(String),
    /// A path that is neither [`GRPC_PATH`] nor [`HTTP_PATH`].
    Path(String),
    /// A content type not received here (OTLP/JSON, `grpc+json`).
    ContentType(String),
    /// Received whole, but not written to the file.
    NotWritten(String),
    /// The bodies being received at once already hold the receiver's budget (the
    /// bytes): refused before it is held, for the exporter to send again.
    OverBudget(usize),
}

impl Refusal {
    /// Its gRPC status.
    pub fn grpc_code(&self) -> GrpcCode {
        match self {
            Refusal::TooLarge => GrpcCode::ResourceExhausted,
            Refusal::Compression(_) | Refusal::Path(_) => GrpcCode::Unimplemented,
            Refusal::BrokenFrame(_) => GrpcCode::Internal,
            Refusal::NotOtlp(_) => GrpcCode::InvalidArgument,
            Refusal::Stalled => GrpcCode::DeadlineExceeded,
            Refusal::Method(_) | Refusal::ContentType(_) => GrpcCode::Internal,
            Refusal::NotWritten(_) | Refusal::OverBudget(_) => GrpcCode::Unavailable,
        }
    }

    /// Its HTTP status: 413 too large, 415 a compression or type not received, 400 not
    /// an export request, 408 stalled, 405 another method, 404 another path, 503 not
    /// written or over the receiver's budget (OTLP/HTTP exporters send it again).
    pub fn http_status(&self) -> u16 {
        match self {
            Refusal::TooLarge => 413,
            Refusal::Compression(_) | Refusal::ContentType(_) => 415,
            Refusal::BrokenFrame(_) | Refusal::NotOtlp(_) => 400,
            Refusal::Stalled => 408,
            Refusal::Method(_) => 405,
            Refusal::Path(_) => 404,
            Refusal::NotWritten(_) | Refusal::OverBudget(_) => 503,
        }
    }

    /// Whether the refusal is about the size of the body.
    pub fn is_too_large(&self) -> bool {
        matches!(self, Refusal::TooLarge)
    }

    /// Whether the refusal is the receiver's budget for bodies held at once.
    pub fn is_over_budget(&self) -> bool {
        matches!(self, Refusal::OverBudget(_))
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge => write!(
                f,
                "the export request is larger than {} MiB, the most received",
                MAX_MESSAGE_BYTES >> 20
            ),
            Refusal::Compression(name) => write!(
                f,
                "compression '{name}' is not received here (only {ACCEPTED_ENCODINGS})"
            ),
            Refusal::BrokenFrame(why) => write!(f, "not one whole gRPC message: {why}"),
            Refusal::NotOtlp(why) => write!(f, "not an OTLP trace export request: {why}"),
            Refusal::Stalled => f.write_str("the request's body did not arrive in time"),
            Refusal::Method(method) => {
                write!(f, "{method} is not served here: an export is a POST")
            }
            Refusal::Path(path) => write!(
                f,
                "nothing is served at {path}: traces go to {HTTP_PATH} or, over gRPC, to {GRPC_PATH}"
            ),
            Refusal::ContentType(kind) => write!(
                f,
                "content type '{kind}' is not received here: send application/x-protobuf (OTLP/HTTP) or application/grpc"
            ),
            Refusal::NotWritten(why) => write!(f, "received, but not written: {why}"),
            Refusal::OverBudget(budget) => write!(
                f,
                "the requests arriving at once already hold {}, the most this receiver holds: send it again",
                inferlint_engines::input::size_text(*budget as u64)
            ),
        }
    }
}

/// A compression an exporter names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// None.
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// zlib (RFC 1950): what gRPC and HTTP call `deflate`.
    Deflate,
}

impl Codec {
    /// The codec a `grpc-encoding` or `Content-Encoding` value names; an absent header is
    /// identity.
    pub fn named(name: Option<&str>) -> Result<Codec, Refusal> {
        let Some(name) = name.map(str::trim) else {
            return Ok(Codec::Identity);
        };
        match name.to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(Codec::Identity),
            "gzip" | "x-gzip" => Ok(Codec::Gzip),
            "deflate" => Ok(Codec::Deflate),
            _ => Err(Refusal::Compression(name.to_owned())),
        }
    }

    /// The bytes decompressed, at most [`MAX_MESSAGE_BYTES`] of them: a larger result is
    /// refused as soon as it passes the bound, so a small body that inflates to gigabytes
    /// costs no more than the bound.
    pub fn decode<'a>(self, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>, Refusal> {
        let reader: Box<dyn Read + 'a> = match self {
            Codec::Identity => return Ok(std::borrow::Cow::Borrowed(bytes)),
            Codec::Gzip => Box::new(flate2::read::GzDecoder::new(bytes)),
            Codec::Deflate => Box::new(flate2::read::ZlibDecoder::new(bytes)),
        };
        let mut out = Vec::new();
        reader
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| Refusal::NotOtlp(format!("does not decompress: {e}")))?;
        if out.len() > MAX_MESSAGE_BYTES {
            return Err(Refusal::TooLarge);
        }
        Ok(std::borrow::Cow::Owned(out))
    }
}

/// The one message of a unary gRPC request's body, decompressed with `encoding` (the
/// `grpc-encoding` header) where its flag says it is compressed.
pub fn grpc_message<'a>(
    body: &'a [u8],
    encoding: Option<&str>,
) -> Result<std::borrow::Cow<'a, [u8]>, Refusal> {
    if body.is_empty() {
        return Err(Refusal::BrokenFrame("no message was sent".into()));
    }
    if body.len() < 5 {
        return Err(Refusal::BrokenFrame(format!(
            "{} bytes, fewer than a frame's 5-byte prefix",
            body.len()
        )));
    }
    let flag = body[0];
    let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if length > MAX_MESSAGE_BYTES {
        return Err(Refusal::TooLarge);
    }
    let rest = &body[5..];
    if rest.len() < length {
        return Err(Refusal::BrokenFrame(format!(
            "the frame says {length} bytes, {} came",
            rest.len()
        )));
    }
    if rest.len() > length {
        return Err(Refusal::BrokenFrame(format!(
            "{} bytes after the message; an export sends one",
            rest.len() - length
        )));
    }
    let message = &rest[..length];
    match flag {
        0 => Ok(std::borrow::Cow::Borrowed(message)),
        1 => match Codec::named(encoding)? {
            Codec::Identity => Err(Refusal::BrokenFrame(
                "the message is flagged compressed, and no grpc-encoding names how".into(),
            )),
            codec => codec.decode(message),
        },
        other => Err(Refusal::BrokenFrame(format!(
            "compressed flag {other}, neither 0 nor 1"
        ))),
    }
}

/// Decodes an export request.
pub fn decode_request(bytes: &[u8]) -> Result<ExportTraceServiceRequest, Refusal> {
    ExportTraceServiceRequest::decode(bytes).map_err(|e| Refusal::NotOtlp(e.to_string()))
}

/// The answer to a good export: an empty `ExportTraceServiceResponse` (no partial
/// success), zero bytes in protobuf.
pub fn empty_response() -> Vec<u8> {
    opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::default()
        .encode_to_vec()
}

/// `message` in a gRPC frame, uncompressed.
pub fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// `grpc-message` as gRPC writes it: percent-encoded outside printable ASCII, and `%`
/// itself.
pub fn grpc_message_header(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `google.rpc.Status` in protobuf (code 1, message 2): the body OTLP/HTTP answers an
/// error with.
pub fn rpc_status(code: GrpcCode, message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::int32::encode(1, &(code as i32), &mut out);
    prost::encoding::string::encode(2, &message.to_owned(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_frame_holds_one_message_after_five_bytes() {
        // gRPC's PROTOCOL-HTTP2.md: Compressed-Flag (1 byte), Message-Length (4 bytes, big
        // endian), Message.
        let framed = grpc_frame(b"abc");
        assert_eq!(framed, [0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(grpc_message(&framed, None).unwrap().as_ref(), b"abc");
        assert_eq!(grpc_frame(&[]), [0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_compressed_message_is_inflated_by_the_named_codec() {
        let message = b"the spans".repeat(100);
        let mut framed = grpc_frame(&gzip(&message));
        framed[0] = 1;
        assert_eq!(
            grpc_message(&framed, Some("gzip")).unwrap().as_ref(),
            &message[..]
        );
        // Flagged compressed with no codec named: the frame contradicts its headers.
        assert!(matches!(
            grpc_message(&framed, None),
            Err(Refusal::BrokenFrame(_))
        ));
        // A codec not served: UNIMPLEMENTED, as gRPC answers an unknown encoding.
        let refused = grpc_message(&framed, Some("zstd")).unwrap_err();
        assert_eq!(refused, Refusal::Compression("zstd".into()));
        assert_eq!(refused.grpc_code(), GrpcCode::Unimplemented);
        // An uncompressed flag ignores the header: the message is as sent.
        let plain = grpc_frame(b"x");
        assert_eq!(grpc_message(&plain, Some("zstd")).unwrap().as_ref(), b"x");
    }

    #[test]
    fn a_broken_frame_is_refused_naming_what_is_wrong() {
        assert!(matches!(
            grpc_message(b"", None),
            Err(Refusal::BrokenFrame(_))
        ));
        assert!(matches!(
            grpc_message(&[0, 0, 0], None),
            Err(Refusal::BrokenFrame(_))
        ));
        // Says 10 bytes, sends 2.
        assert!(matches!(
            grpc_message(&[0, 0, 0, 0, 10, 1, 2], None),
            Err(Refusal::BrokenFrame(m)) if m.contains("10 bytes, 2 came")
        ));
        // Two messages in a unary call.
        let mut two = grpc_frame(b"a");
        two.extend(grpc_frame(b"b"));
        assert!(matches!(
            grpc_message(&two, None),
            Err(Refusal::BrokenFrame(_))
        ));
        assert!(matches!(
            grpc_message(&[7, 0, 0, 0, 0], None),
            Err(Refusal::BrokenFrame(_))
        ));
    }

    #[test]
    fn a_length_over_the_bound_is_refused_before_anything_is_read() {
        let mut prefix = vec![0u8];
        prefix.extend_from_slice(&((MAX_MESSAGE_BYTES as u32) + 1).to_be_bytes());
        assert_eq!(grpc_message(&prefix, None), Err(Refusal::TooLarge));
    }

    #[test]
    fn a_body_that_inflates_past_the_bound_stops_at_the_bound() {
        // 8 MiB of zeros gzip to a few kilobytes.
        let bomb = gzip(&vec![0u8; 2 * MAX_MESSAGE_BYTES]);
        assert!(bomb.len() < 64 << 10);
        assert_eq!(Codec::Gzip.decode(&bomb), Err(Refusal::TooLarge));
        // Exactly the bound inflates.
        let whole = gzip(&vec![0u8; MAX_MESSAGE_BYTES]);
        assert_eq!(Codec::Gzip.decode(&whole).unwrap().len(), MAX_MESSAGE_BYTES);
        // Not gzip at all.
        assert!(matches!(
            Codec::Gzip.decode(b"plain"),
            Err(Refusal::NotOtlp(_))
        ));
    }

    #[test]
    fn codecs_are_named_as_exporters_name_them() {
        assert_eq!(Codec::named(None), Ok(Codec::Identity));
        assert_eq!(Codec::named(Some("identity")), Ok(Codec::Identity));
        assert_eq!(Codec::named(Some("GZIP")), Ok(Codec::Gzip));
        assert_eq!(Codec::named(Some("deflate")), Ok(Codec::Deflate));
        assert!(Codec::named(Some("br")).is_err());
    }

    #[test]
    fn garbage_is_not_an_export_request() {
        // A protobuf field tag of wire type 7 does not exist.
        assert!(matches!(
            decode_request(&[0xff, 0xff, 0xff]),
            Err(Refusal::NotOtlp(_))
        ));
        // Zero bytes are the empty request (every field absent), which is valid.
        assert_eq!(decode_request(&[]).unwrap().resource_spans.len(), 0);
    }

    #[test]
    fn the_empty_answer_and_the_status_body() {
        // An ExportTraceServiceResponse without partial_success has no field to write.
        assert!(empty_response().is_empty());
        // google.rpc.Status { code: 3, message: "no" }: tag 1 varint 3, tag 2 length 2.
        assert_eq!(
            rpc_status(GrpcCode::InvalidArgument, "no"),
            [0x08, 3, 0x12, 2, b'n', b'o']
        );
    }

    #[test]
    fn grpc_message_is_percent_encoded() {
        assert_eq!(grpc_message_header("a b"), "a b");
        assert_eq!(grpc_message_header("100%"), "100%25");
        assert_eq!(grpc_message_header("é\n"), "%C3%A9%0A");
    }

    #[test]
    fn every_refusal_answers_an_error_on_both_transports() {
        let all = [
            Refusal::TooLarge,
            Refusal::Compression("zstd".into()),
            Refusal::BrokenFrame("x".into()),
            Refusal::NotOtlp("x".into()),
            Refusal::Stalled,
            Refusal::Method("GET".into()),
            Refusal::Path("/x".into()),
            Refusal::ContentType("application/json".into()),
            Refusal::NotWritten("disk full".into()),
        ];
        for r in all {
            assert_ne!(r.grpc_code(), GrpcCode::Ok, "{r}");
            assert!(r.http_status() >= 400, "{r}");
        }
    }
}
