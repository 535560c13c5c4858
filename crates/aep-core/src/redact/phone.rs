//! Phone numbers for rule (d) of the AEP-0003 §9.4 pipeline: judged by the shape of
//! their digit groups, which no regular expression tells from a date or a version.

/// The most digits a phone number has (E.164).
const PHONE_MAX_DIGITS: usize = 15;
/// The fewest digits a phone number has (a local number without area code).
const PHONE_MIN_DIGITS: usize = 7;
/// The longest separator between two digit groups of one phone number (`") "`, `" - "`).
const PHONE_MAX_SEPARATOR: usize = 3;

/// The phone numbers inside the candidate `text[start..end]` (a run of digits,
/// parentheses, dots, dashes and spaces), as byte spans, left to right.
///
/// Phone syntax is too loose for a regular expression to tell a number from a date, a
/// version, an IP address or a count, so candidates are split into digit groups and
/// judged by shape: with a leading `+` any grouping of 8 to 15 digits; otherwise 7 to
/// 12 digits in groups of at most four, the last of three or four, and either an area
/// code in parentheses, dash separators, or the `3-3-4` / `1-3-3-4` / `3-4` shapes.
/// Dates (`03-07-2026`) are refused. Each start is tried against the longest valid end,
/// bounded by [`PHONE_MAX_DIGITS`], so the work stays linear in the candidate.
pub(super) fn phone_spans(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    // Digit groups of the candidate, as byte ranges.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut i = start;
    while i < end {
        if bytes.get(i).is_some_and(u8::is_ascii_digit) {
            let g = i;
            while i < end && bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            groups.push((g, i));
        } else {
            i += 1;
        }
    }
    let digits: usize = groups.iter().map(|(a, b)| b - a).sum();
    let mut spans = Vec::new();
    if digits < PHONE_MIN_DIGITS {
        return spans;
    }
    let mut first = 0;
    'starts: while first < groups.len() {
        let Some(&(g_start, _)) = groups.get(first) else {
            break;
        };
        // A span may open with `+` and/or `(` right before its first group.
        let mut span_start = g_start;
        while span_start > start && matches!(bytes.get(span_start - 1), Some(b'(' | b'+')) {
            span_start -= 1;
        }
        // The groups this start can reach: separators short enough, digits bounded.
        let mut reach = first;
        let mut count = 0;
        while let Some(&(a, b)) = groups.get(reach) {
            if reach > first {
                let prev_end = groups.get(reach - 1).map_or(a, |g| g.1);
                if a - prev_end > PHONE_MAX_SEPARATOR {
                    break;
                }
            }
            count += b - a;
            if count > PHONE_MAX_DIGITS {
                break;
            }
            reach += 1;
        }
        for last in (first..reach).rev() {
            let span_end = groups.get(last).map_or(span_start, |g| g.1);
            // Closing parenthesis of a number that ends `… (0)`-style is not included:
            // a number never ends in a separator.
            let Some(span_groups) = groups.get(first..=last) else {
                continue;
            };
            if is_phone(text, span_start, span_end, span_groups) {
                spans.push((span_start, span_end));
                first = last + 1;
                continue 'starts;
            }
        }
        first += 1;
    }
    spans
}

/// Whether `text[start..end]`, with digit `groups`, is a phone number in its context.
/// Allocation-free: hostile digit soup calls this often.
fn is_phone(text: &str, start: usize, end: usize, groups: &[(usize, usize)]) -> bool {
    let len = |g: &(usize, usize)| g.1 - g.0;
    let lens = || groups.iter().map(len);
    let digits: usize = lens().sum();
    let (Some(first), Some(last)) = (groups.first().map(len), groups.last().map(len)) else {
        return false;
    };
    let Some(span) = text.get(start..end) else {
        return false;
    };
    let plus = span.starts_with('+');
    if plus {
        if !(8..=PHONE_MAX_DIGITS).contains(&digits) {
            return false;
        }
    } else if !(PHONE_MIN_DIGITS..=12).contains(&digits)
        || lens().any(|l| l > 4)
        || lens().skip(1).any(|l| l < 2)
        || !(3..=4).contains(&last)
    {
        return false;
    }
    // Separators between groups, each short and made of phone punctuation only.
    let separators = || {
        groups.windows(2).filter_map(|w| match w {
            [(_, prev_end), (next_start, _)] => text.get(*prev_end..*next_start),
            _ => None,
        })
    };
    if separators()
        .any(|s| s.len() > PHONE_MAX_SEPARATOR || !s.chars().all(|c| " ().-".contains(c)))
    {
        return false;
    }
    // Glued to a word or a longer number: part of an identifier, a version, a path.
    let before = text[..start].chars().next_back();
    let mut after_chars = text[end..].chars();
    let after = after_chars.next();
    if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')) {
        return false;
    }
    if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return false;
    }
    if after.is_some_and(|c| matches!(c, '.' | '-' | '/' | ':'))
        && after_chars.next().is_some_and(|c| c.is_ascii_digit())
    {
        return false;
    }
    if span[usize::from(plus)..].contains('+') {
        return false;
    }
    let (open, close) = (span.matches('(').count(), span.matches(')').count());
    if open != close || open > 1 {
        return false;
    }
    if plus {
        return true;
    }
    let mut shape = [0usize; 4];
    let shaped_len = groups.len();
    if shaped_len <= shape.len() {
        for (slot, l) in shape.iter_mut().zip(lens()) {
            *slot = l;
        }
    }
    let shape = shape.get(..shaped_len).unwrap_or_default();
    if let [a, b, 4] = shape {
        if *a <= 2 && *b <= 2 {
            return false; // 03-07-2026: a date.
        }
    }
    if open == 1 {
        return true;
    }
    let dashed = separators().all(|s| s.trim() == "-");
    let shaped = matches!(shape, [3, 3, 4] | [1, 3, 3, 4] | [3, 4]);
    let uniform = separators().zip(separators().skip(1)).all(|(a, b)| a == b);
    if dashed {
        return first <= 4 && (groups.len() > 2 || shaped);
    }
    shaped && uniform
}
