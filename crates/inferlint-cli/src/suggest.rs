//! "Did you mean": the closest command by the Ratcliff/Obershelp similarity ratio.

/// The similarity of two strings, 0 to 1: twice the matched characters over the total,
/// matching the longest common block first, then recursively on either side.
pub fn ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * matched(&a, &b) as f64 / total as f64
}

fn matched(a: &[char], b: &[char]) -> usize {
    let (mut best, mut at_a, mut at_b) = (0, 0, 0);
    for i in 0..a.len() {
        for j in 0..b.len() {
            let mut k = 0;
            while i + k < a.len() && j + k < b.len() && a[i + k] == b[j + k] {
                k += 1;
            }
            if k > best {
                (best, at_a, at_b) = (k, i, j);
            }
        }
    }
    if best == 0 {
        return 0;
    }
    best + matched(&a[..at_a], &b[..at_b]) + matched(&a[at_a + best..], &b[at_b + best..])
}

/// The closest candidate with a ratio of at least 0.6.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (ratio(word, c), *c))
        .filter(|(r, _)| *r >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_commands() {
        assert_eq!(closest("xrya", &["xray", "report"]), Some("xray"));
        assert_eq!(closest("reprot", &["xray", "report"]), Some("report"));
        assert_eq!(closest("zzzz", &["xray", "report"]), None);
    }
}
