//! The page's Content-Security-Policy: nothing from any origin, and only the one inline
//! style sheet and the one inline script the report itself carries, named by their
//! SHA-256 hashes.
//!
//! Hashes rather than `'unsafe-inline'`: were an escaping bug ever to let a log line put a
//! `<script>` into the page, the browser would still refuse to run it. Hashes rather than a
//! nonce: the report is a file, not a server response, so a nonce would be as public as the
//! page and would make every report differ for no reason. The digest is RustCrypto's
//! `sha2` and its spelling the `base64` crate's standard alphabet; the tests hold our use
//! of them to FIPS 180-4's and RFC 4648's vectors.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The policy for a page whose only style sheet is `style` and only script is `script`.
pub fn policy(style: &str, script: &str) -> String {
    format!(
        "default-src 'none'; style-src '{}'; script-src '{}'; img-src data:; \
         base-uri 'none'; form-action 'none'",
        source_hash(style),
        source_hash(script)
    )
}

/// The policy for a page with the one style sheet `style` and no script at all.
pub fn policy_without_script(style: &str) -> String {
    format!(
        "default-src 'none'; style-src '{}'; script-src 'none'; img-src data:; \
         base-uri 'none'; form-action 'none'",
        source_hash(style)
    )
}

/// The CSP source expression for inline content: `sha256-` and the base64 digest.
pub fn source_hash(content: &str) -> String {
    format!("sha256-{}", base64(&sha256(content.as_bytes())))
}

/// SHA-256 (FIPS 180-4) of a byte string.
fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Standard base64 with padding (RFC 4648 section 4), the alphabet and padding of a CSP
/// hash source.
fn base64(data: &[u8]) -> String {
    STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// NIST's SHA-256 examples (FIPS 180-2, appendix B): the empty string, one block,
    /// two blocks, and a million `a`s.
    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million_a = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million_a)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    /// RFC 4648 section 10's test vectors: the standard alphabet, padded.
    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
        assert_eq!(base64(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_policy_names_no_origin() {
        let p = policy("a{}", "1");
        assert!(p.starts_with("default-src 'none';"));
        assert!(!p.contains("http"));
        assert!(!p.contains("unsafe"));
        assert!(p.contains(&source_hash("1")));
    }
}
