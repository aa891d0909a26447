//! Analysts' bearer tokens: made at random, stored in a policy only as their BLAKE3 hash, and
//! checked by hashing what a request presents. A token carries 256 random bits, so a fast
//! hash is enough: no guess of a token can be checked against its hash faster than by asking
//! the server, and the server compares hashes, never tokens.

use rand::RngCore;

/// A new token and the hash a policy records for it: `(token, "blake3:...")`.
pub fn new_token() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = format!("dpq_{}", hex(&bytes));
    let hash = format!("blake3:{}", hex(hash(&token).as_bytes()));
    (token, hash)
}

/// The hash of a presented token.
pub fn hash(token: &str) -> blake3::Hash {
    blake3::hash(token.as_bytes())
}

/// The hash a policy writes (`blake3:` and 64 hex digits), as bytes.
pub fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("blake3:")?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(chunk).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_its_hash_and_no_other() {
        let (token, text) = new_token();
        let stored = parse_hash(&text).expect("a hash dpq printed reads back");
        // blake3::Hash compares in constant time.
        assert_eq!(hash(&token), blake3::Hash::from(stored));
        assert_ne!(hash(&format!("{token}x")), blake3::Hash::from(stored));
        let (other, _) = new_token();
        assert_ne!(token, other);
        assert!(parse_hash("blake3:12").is_none());
        assert!(parse_hash("sha256:00").is_none());
    }
}
