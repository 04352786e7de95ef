//! Just enough XML for snapper's info.xml: elements, their text, the five
//! named entities and character references, comments, processing
//! instructions and CDATA. Attributes are skipped; a document type
//! declaration (and so any entity it could define) is refused, as is
//! anything not well formed or nested deeper than [`DEEPEST`].

/// The deepest nesting read (info.xml nests 3 deep).
const DEEPEST: usize = 16;

/// An element: its name, its child elements and its text (all its text
/// pieces joined, entities decoded).
#[derive(Debug, Default)]
pub(super) struct Element {
    pub(super) name: String,
    pub(super) children: Vec<Element>,
    pub(super) text: String,
}

impl Element {
    /// The first child element named `name`.
    pub(super) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// The document's root element, or `None` when it is not well formed.
pub(super) fn parse(s: &str) -> Option<Element> {
    let mut p = Parser {
        s: s.strip_prefix('\u{feff}').unwrap_or(s),
    };
    p.misc()?;
    let root = p.element(0)?;
    p.misc()?;
    p.s.is_empty().then_some(root)
}

struct Parser<'a> {
    s: &'a str,
}

impl Parser<'_> {
    /// Skips white space, comments and processing instructions.
    fn misc(&mut self) -> Option<()> {
        loop {
            self.s = self.s.trim_start();
            if self.s.starts_with("<!--") {
                self.skip_past("-->")?;
            } else if self.s.starts_with("<?") {
                self.skip_past("?>")?;
            } else {
                return Some(());
            }
        }
    }

    /// Moves past the first `end`; `None` when there is none.
    fn skip_past(&mut self, end: &str) -> Option<&str> {
        let i = self.s.find(end)?;
        let skipped = &self.s[..i];
        self.s = &self.s[i + end.len()..];
        Some(skipped)
    }

    fn name(&mut self) -> Option<String> {
        let end = self
            .s
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
            .unwrap_or(self.s.len());
        if end == 0 {
            return None;
        }
        let n = self.s[..end].to_owned();
        self.s = &self.s[end..];
        Some(n)
    }

    fn element(&mut self, depth: usize) -> Option<Element> {
        if depth >= DEEPEST {
            return None;
        }
        self.s = self.s.strip_prefix('<')?;
        let mut el = Element {
            name: self.name()?,
            ..Element::default()
        };
        // Attributes, skipped.
        loop {
            self.s = self.s.trim_start();
            if let Some(rest) = self.s.strip_prefix("/>") {
                self.s = rest;
                return Some(el);
            }
            if let Some(rest) = self.s.strip_prefix('>') {
                self.s = rest;
                break;
            }
            self.name()?;
            self.s = self.s.trim_start().strip_prefix('=')?.trim_start();
            let quote = self.s.chars().next().filter(|&q| q == '"' || q == '\'')?;
            self.s = &self.s[1..];
            self.skip_past(if quote == '"' { "\"" } else { "'" })?;
        }
        // Content.
        loop {
            if let Some(rest) = self.s.strip_prefix("</") {
                self.s = rest;
                if self.name()? != el.name {
                    return None;
                }
                self.s = self.s.trim_start().strip_prefix('>')?;
                return Some(el);
            } else if self.s.starts_with("<!--") {
                self.skip_past("-->")?;
            } else if let Some(rest) = self.s.strip_prefix("<![CDATA[") {
                self.s = rest;
                let raw = self.skip_past("]]>")?;
                el.text.push_str(raw);
            } else if self.s.starts_with("<?") {
                self.skip_past("?>")?;
            } else if self.s.starts_with("<!") {
                return None;
            } else if self.s.starts_with('<') {
                el.children.push(self.element(depth + 1)?);
            } else {
                let end = self.s.find('<')?;
                decode(&self.s[..end], &mut el.text)?;
                self.s = &self.s[end..];
            }
        }
    }
}

/// Appends `raw` to `out` with its entities and character references
/// decoded; `None` at an unknown entity or an invalid reference.
fn decode(raw: &str, out: &mut String) -> Option<()> {
    let mut rest = raw;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        let end = rest.find(';')?;
        let entity = &rest[..end];
        rest = &rest[end + 1..];
        let c = match entity {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(hex) = entity.strip_prefix("#x") {
                    u32::from_str_radix(hex, 16).ok()?
                } else {
                    entity.strip_prefix('#')?.parse().ok()?
                };
                char::from_u32(code).filter(|&c| c != '\0')?
            }
        };
        out.push(c);
    }
    out.push_str(rest);
    Some(())
}
