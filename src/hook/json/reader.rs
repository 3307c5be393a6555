//! Reading JSON text: whitespace, strings, numbers and literals, and skipping a whole value,
//! validated as serde_json validates what it skips. Eight bytes at a time where JSON has runs
//! of plain bytes (string content, indentation).

use super::{Bail, Result};

/// Deepest nesting of arrays and objects decoded here; deeper input goes to serde_json, whose
/// own limit (128) is then the one that applies.
pub(super) const MAX_DEPTH: u32 = 100;

/// A decoded string: borrowed from the input unless it had escapes.
pub(super) enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

/// An integer as serde_json hands it to a visitor.
pub(super) enum Integer {
    Unsigned(u64),
    Signed(i64),
}

/// The deserializer: the input and a position in it.
pub(super) struct Json<'de> {
    pub(super) text: &'de str,
    pub(super) bytes: &'de [u8],
    pub(super) pos: usize,
    depth: u32,
}

/// Eight copies of `byte`.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// Where the next byte that ends a run of plain string content is, from `from`: a quote, a
/// backslash or a control character (which JSON forbids in a string), or the end of the input.
/// Eight bytes at a time: a byte is flagged when it equals `"` or `\` or is below 0x20, and the
/// lowest flagged byte is exact (borrows only run towards higher bytes).
pub(super) fn string_end(bytes: &[u8], from: usize) -> usize {
    const LOW: u64 = splat(0x01);
    const HIGH: u64 = splat(0x80);
    let mut pos = from;
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let quote = word ^ splat(b'"');
        let backslash = word ^ splat(b'\\');
        let flagged = ((quote.wrapping_sub(LOW) & !quote)
            | (backslash.wrapping_sub(LOW) & !backslash)
            | (word.wrapping_sub(splat(0x20)) & !word))
            & HIGH;
        if flagged != 0 {
            return pos + (flagged.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while let Some(&byte) = bytes.get(pos) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        pos += 1;
    }
    pos
}

impl<'de> Json<'de> {
    /// A reader at the start of `text`.
    pub(super) fn new(text: &'de str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    /// Skips whitespace. Inline, for the common case of none (every byte of JSON's whitespace
    /// is at most a space; every other byte between tokens is above).
    #[inline]
    pub(super) fn skip_whitespace(&mut self) {
        if self.bytes.get(self.pos).is_some_and(|&byte| byte > b' ') {
            return;
        }
        self.skip_whitespace_run();
    }

    /// Skips whitespace; runs of spaces (the indentation of a pretty-printed body) eight bytes
    /// at a time.
    fn skip_whitespace_run(&mut self) {
        let bytes = self.bytes;
        let mut pos = self.pos;
        loop {
            while let Some(chunk) = bytes.get(pos..pos + 8) {
                let mut word = [0; 8];
                word.copy_from_slice(chunk);
                let other = u64::from_le_bytes(word) ^ splat(b' ');
                if other != 0 {
                    pos += (other.trailing_zeros() / 8) as usize;
                    break;
                }
                pos += 8;
            }
            match bytes.get(pos) {
                Some(b' ' | b'\n' | b'\r' | b'\t') => pos += 1,
                _ => break,
            }
        }
        self.pos = pos;
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    pub(super) fn peek(&mut self) -> Result<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied().ok_or(Bail)
    }

    /// Consumes `byte` after whitespace.
    #[inline]
    pub(super) fn expect(&mut self, byte: u8) -> Result<()> {
        if self.peek()? == byte {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Consumes the literal `word` (`null`, `true`, `false`) at the current position.
    pub(super) fn literal(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    pub(super) fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        self.pos += 1;
        Ok(())
    }

    /// Consumes `close` after the content of an array or object.
    pub(super) fn leave(&mut self, close: u8) -> Result<()> {
        self.expect(close)?;
        self.depth -= 1;
        Ok(())
    }

    /// The string whose opening quote is at the current position.
    pub(super) fn string(&mut self) -> Result<Text<'de>> {
        let start = self.pos + 1;
        let end = string_end(self.bytes, start);
        match self.bytes.get(end) {
            Some(b'"') => {
                self.pos = end + 1;
                self.text.get(start..end).map(Text::Borrowed).ok_or(Bail)
            }
            Some(b'\\') => self.escaped(start, end).map(Text::Owned),
            _ => Err(Bail),
        }
    }

    /// The rest of a string from `start` that has an escape at `escape`, unescaped.
    fn escaped(&mut self, start: usize, mut escape: usize) -> Result<String> {
        let mut out = String::with_capacity(escape - start + 16);
        let mut from = start;
        loop {
            out.push_str(self.text.get(from..escape).ok_or(Bail)?);
            let kind = *self.bytes.get(escape + 1).ok_or(Bail)?;
            from = escape + 2;
            out.push(match kind {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let code = self.hex4(from)?;
                    from += 4;
                    // A surrogate pairs with the next escape or is refused: serde_json decides.
                    char::from_u32(code).ok_or(Bail)?
                }
                _ => return Err(Bail),
            });
            escape = string_end(self.bytes, from);
            match self.bytes.get(escape) {
                Some(b'"') => {
                    out.push_str(self.text.get(from..escape).ok_or(Bail)?);
                    self.pos = escape + 1;
                    return Ok(out);
                }
                Some(b'\\') => {}
                _ => return Err(Bail),
            }
        }
    }

    /// The four hex digits at `at`.
    fn hex4(&self, at: usize) -> Result<u32> {
        let digits = self.bytes.get(at..at + 4).ok_or(Bail)?;
        digits.iter().try_fold(0, |code, &digit| {
            let value = char::from(digit).to_digit(16).ok_or(Bail)?;
            Ok(code * 16 + value)
        })
    }

    /// Skips the string whose opening quote is at the current position.
    fn skip_string(&mut self) -> Result<()> {
        let mut pos = self.pos + 1;
        loop {
            pos = string_end(self.bytes, pos);
            match self.bytes.get(pos) {
                Some(b'"') => {
                    self.pos = pos + 1;
                    return Ok(());
                }
                Some(b'\\') => match self.bytes.get(pos + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => pos += 2,
                    Some(b'u') => {
                        self.hex4(pos + 2)?;
                        pos += 6;
                    }
                    _ => return Err(Bail),
                },
                _ => return Err(Bail),
            }
        }
    }

    /// Consumes digits from the current position; how many.
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Skips the integer part of a number (after its sign): `0` or digits not starting with `0`.
    fn skip_integer(&mut self) -> Result<()> {
        match self.bytes.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
                    return Err(Bail);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Bail),
        }
        Ok(())
    }

    /// Skips the number at the current position, checking JSON's grammar.
    fn skip_number(&mut self) -> Result<()> {
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        self.skip_integer()?;
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        Ok(())
    }

    /// The integer at the current position, as serde_json hands it to a visitor: `u64` when not
    /// negative, `i64` when negative. Floats, `-0` and integers out of range are left to serde_json.
    pub(super) fn integer(&mut self) -> Result<Integer> {
        let negative = self.bytes.get(self.pos) == Some(&b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        self.skip_integer()?;
        if let Some(b'.' | b'e' | b'E') = self.bytes.get(self.pos) {
            return Err(Bail);
        }
        let magnitude = self.bytes[start..self.pos]
            .iter()
            .try_fold(0_u64, |n, &digit| {
                n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            });
        match (negative, magnitude) {
            (false, Some(n)) => Ok(Integer::Unsigned(n)),
            (true, Some(n)) if n > 0 => 0_i64
                .checked_sub_unsigned(n)
                .map(Integer::Signed)
                .ok_or(Bail),
            _ => Err(Bail),
        }
    }

    /// Skips the value at the next position.
    pub(super) fn skip_value(&mut self) -> Result<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                self.enter()?;
                if self.peek()? != b'}' {
                    loop {
                        if self.peek()? != b'"' {
                            return Err(Bail);
                        }
                        self.skip_string()?;
                        self.expect(b':')?;
                        self.skip_value()?;
                        if self.peek()? != b',' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                self.leave(b'}')
            }
            b'[' => {
                self.enter()?;
                if self.peek()? != b']' {
                    loop {
                        self.skip_value()?;
                        if self.peek()? != b',' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                self.leave(b']')
            }
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => Err(Bail),
        }
    }
}
