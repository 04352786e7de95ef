//! Quoting of file names in messages, in the spirit of coreutils' `shell-escape` style.
//!
//! Output lines print names raw, as du does; messages on stderr quote them so
//! that a name with a newline or an invalid byte cannot forge a line.

/// Quotes `name` for a message: `'a b'`, `'it'\''s'`, `'a'$'\n''b'`.
pub fn quote(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    let mut in_quote = false;
    let open = |out: &mut String, in_quote: &mut bool| {
        if !*in_quote {
            out.push('\'');
            *in_quote = true;
        }
    };
    let close = |out: &mut String, in_quote: &mut bool| {
        if *in_quote {
            out.push('\'');
            *in_quote = false;
        }
    };
    for chunk in name.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch == '\'' {
                close(&mut out, &mut in_quote);
                out.push_str("\\'");
            } else if ch.is_control() {
                close(&mut out, &mut in_quote);
                match ch {
                    '\n' => out.push_str("$'\\n'"),
                    '\t' => out.push_str("$'\\t'"),
                    '\r' => out.push_str("$'\\r'"),
                    c => out.push_str(&format!("$'\\{:03o}'", c as u32)),
                }
            } else {
                open(&mut out, &mut in_quote);
                out.push(ch);
            }
        }
        for b in chunk.invalid() {
            close(&mut out, &mut in_quote);
            out.push_str(&format!("$'\\{b:03o}'"));
        }
    }
    if out.is_empty() {
        return "''".to_string();
    }
    close(&mut out, &mut in_quote);
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote(b"a b"), "'a b'");
        assert_eq!(quote(b"it's"), "'it'\\''s'");
        assert_eq!(quote(b"a\nb"), "'a'$'\\n''b'");
        assert_eq!(quote(b"x\xffy"), "'x'$'\\377''y'");
        assert_eq!(quote(b""), "''");
    }
}
