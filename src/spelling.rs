//! Likely misspellings: the name a mistyped word was most probably meant to be, for the
//! "did you mean" of errors (statements, keywords, tables, columns, options).

/// The candidate closest to `written` in spelling (case aside), if it is close enough to be a
/// likely misspelling: at most one edit in a short word, two in a word of seven letters or
/// more (a swap of two neighbours is one edit). An exact match, case aside, is returned too.
pub fn closest<'a>(
    written: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let written = written.to_lowercase();
    let allowed = if written.chars().count() >= 7 { 2 } else { 1 };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let d = strsim::damerau_levenshtein(&written, &candidate.to_lowercase());
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}
