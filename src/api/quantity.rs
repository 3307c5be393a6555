//! Kubernetes resource quantities: parsing, canonical form and exact comparison.
//!
//! The API server stores every quantity in its canonical form (`1000m` becomes `1`, `1024Ki`
//! becomes `1Mi`). A child that carries a non-canonical quantity differs from what is stored
//! on every sync, so the hook writes canonical quantities only. The rules follow apimachinery's
//! `resource.Quantity`: the suffix chooses binary SI, decimal SI or a decimal exponent; binary
//! values below 1024 or with a fraction fall back to decimal SI; decimal mantissas are integers
//! with exponents in steps of three, the smallest unit being the nano, rounded up.
//!
//! Hand-written on purpose: no crate prints apimachinery's canonical form (k8s-openapi's
//! `Quantity` is only the string, and the parsing crates normalise differently or lose the
//! exactness the comparison with a memory limit needs).

use thiserror::Error;

/// What apimachinery's quantity parser accepts, as its error message states it.
const QUANTITY_PATTERN: &str = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Why a string is not a quantity.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum QuantityError {
    /// Not of the form `<number><suffix>`.
    #[error("quantities must match the regular expression '{}'", QUANTITY_PATTERN)]
    Syntax,
    /// Too many digits or too large an exponent to handle exactly.
    #[error("quantity is too large")]
    Range,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// A parsed quantity: `(-1)^negative * mantissa * 10^exp10 * 2^exp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    mantissa: u128,
    exp10: i32,
    exp2: u32,
    format: Format,
}

const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

impl Quantity {
    /// Parses a quantity such as `128Mi`, `100m`, `1.5`, `2e3`.
    ///
    /// # Errors
    /// [`QuantityError::Syntax`] for anything that is not a quantity, [`QuantityError::Range`]
    /// for numbers with more digits than can be held exactly.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (number, suffix) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(QuantityError::Syntax);
        }
        let mut mantissa: u128 = 0;
        for digit in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(u128::from(digit - b'0')))
                .ok_or(QuantityError::Range)?;
        }
        let mut exp10 = -i32::try_from(fraction.len()).map_err(|_| QuantityError::Range)?;
        let (format, exp2) = if let Some(power) = BINARY.iter().skip(1).position(|s| *s == suffix) {
            (
                Format::BinarySi,
                10 * (u32::try_from(power).unwrap_or(0) + 1),
            )
        } else if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
            exp10 += e;
            (Format::DecimalSi, 0)
        } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']) {
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(QuantityError::Syntax);
            }
            let e: i32 = exponent.parse().map_err(|_| QuantityError::Range)?;
            if e.abs() > 60 {
                return Err(QuantityError::Range);
            }
            exp10 += e;
            (Format::DecimalExponent, 0)
        } else {
            return Err(QuantityError::Syntax);
        };
        Ok(Self {
            negative: negative && mantissa != 0,
            mantissa,
            exp10,
            exp2,
            format,
        })
    }

    /// A binary-SI quantity of `bytes` (its canonical form is `96Mi`, `1Gi`, ...).
    #[must_use]
    pub fn from_bytes(bytes: u128) -> Self {
        Self {
            negative: false,
            mantissa: bytes,
            exp10: 0,
            exp2: 0,
            format: Format::BinarySi,
        }
    }

    /// Whether the quantity is below zero.
    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The value as `mantissa * 10^exp10` with the binary factor multiplied out.
    fn decimal(&self) -> Option<(u128, i32)> {
        let factor = 1u128.checked_shl(self.exp2)?;
        Some((self.mantissa.checked_mul(factor)?, self.exp10))
    }

    /// The integer value when the quantity has no fractional part.
    fn exact_integer(&self) -> Option<u128> {
        let (mantissa, exp10) = self.decimal()?;
        if exp10 >= 0 {
            mantissa.checked_mul(10u128.checked_pow(exp10.unsigned_abs())?)
        } else {
            let divisor = 10u128.checked_pow(exp10.unsigned_abs())?;
            (mantissa % divisor == 0).then(|| mantissa / divisor)
        }
    }

    /// The absolute value rounded up to a whole unit (bytes for memory, cores for CPU).
    #[must_use]
    pub fn ceil(&self) -> Option<u128> {
        let (mantissa, exp10) = self.decimal()?;
        if exp10 >= 0 {
            mantissa.checked_mul(10u128.checked_pow(exp10.unsigned_abs())?)
        } else {
            match 10u128.checked_pow(exp10.unsigned_abs()) {
                Some(divisor) => Some(mantissa.div_ceil(divisor)),
                None => Some(u128::from(mantissa != 0)),
            }
        }
    }

    /// The canonical text the API server would store.
    ///
    /// # Errors
    /// [`QuantityError::Range`] when the value cannot be represented exactly.
    pub fn canonical(&self) -> Result<String, QuantityError> {
        if self.mantissa == 0 {
            return Ok("0".to_owned());
        }
        let sign = if self.negative { "-" } else { "" };
        if self.format == Format::BinarySi
            && let Some(value) = self.exact_integer().filter(|v| *v >= 1024)
        {
            let mut power = 0;
            let mut scaled = value;
            while power + 1 < BINARY.len() && scaled % 1024 == 0 {
                scaled /= 1024;
                power += 1;
            }
            return Ok(format!("{sign}{scaled}{}", BINARY[power]));
        }
        let (mut mantissa, mut exp10) = self.decimal().ok_or(QuantityError::Range)?;
        // Nano is the smallest unit; smaller values round up (away from zero).
        if exp10 < -9 {
            let divisor = 10u128
                .checked_pow((-9 - exp10).unsigned_abs())
                .ok_or(QuantityError::Range)?;
            mantissa = mantissa.div_ceil(divisor);
            exp10 = -9;
        }
        while exp10.rem_euclid(3) != 0 {
            mantissa = mantissa.checked_mul(10).ok_or(QuantityError::Range)?;
            exp10 -= 1;
        }
        while mantissa % 1000 == 0 {
            mantissa /= 1000;
            exp10 += 3;
        }
        if self.format == Format::DecimalExponent {
            return Ok(if exp10 == 0 {
                format!("{sign}{mantissa}")
            } else {
                format!("{sign}{mantissa}e{exp10}")
            });
        }
        while exp10 > 18 {
            mantissa = mantissa.checked_mul(1000).ok_or(QuantityError::Range)?;
            exp10 -= 3;
        }
        let suffix = DECIMAL
            .iter()
            .find(|(_, e)| *e == exp10)
            .map_or("", |(s, _)| s);
        Ok(format!("{sign}{mantissa}{suffix}"))
    }
}

/// Canonical text of a quantity string.
///
/// # Errors
/// As [`Quantity::parse`] and [`Quantity::canonical`].
pub fn canonicalize(text: &str) -> Result<String, QuantityError> {
    Quantity::parse(text)?.canonical()
}

/// `mib` MiB written as the API server stores it: the largest binary suffix that divides it
/// exactly (`1024` MiB is `1Gi`, `1536` MiB stays `1536Mi`, `1048576` MiB is `1Ti`).
#[must_use]
pub fn mebibytes(mib: i64) -> k8s_openapi::apimachinery::pkg::api::resource::Quantity {
    let bytes = u128::from(mib.unsigned_abs()) << 20;
    let text = Quantity {
        negative: mib < 0,
        ..Quantity::from_bytes(bytes)
    }
    .canonical()
    .unwrap_or_else(|_| format!("{mib}Mi"));
    k8s_openapi::apimachinery::pkg::api::resource::Quantity(text)
}

/// A k8s-openapi quantity in canonical form, as written when it is malformed (validation
/// reports that).
#[must_use]
pub fn canonical(
    q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
) -> k8s_openapi::apimachinery::pkg::api::resource::Quantity {
    k8s_openapi::apimachinery::pkg::api::resource::Quantity(
        canonicalize(&q.0).unwrap_or_else(|_| q.0.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_match_the_api_server() {
        let cases = [
            ("1000m", "1"),
            ("100m", "100m"),
            ("1.5", "1500m"),
            ("0.5", "500m"),
            ("1", "1"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("128Mi", "128Mi"),
            ("1024Ki", "1Mi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1Ki", "1Ki"),
            ("0.1Gi", "107374182400m"),
            ("129M", "129M"),
            ("1000M", "1G"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1500e0", "1500"),
            ("0", "0"),
            ("0Mi", "0"),
            ("0.0000000001", "1n"),
            ("+5", "5"),
            ("-100m", "-100m"),
            ("5k", "5k"),
        ];
        for (input, want) in cases {
            assert_eq!(canonicalize(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn rejects_what_the_api_server_rejects() {
        for bad in [
            "", "abc", "1.2.3", "1Q", "Mi", "1e", "1ee3", "1 Mi", "1mi", ".",
        ] {
            assert_eq!(canonicalize(bad), Err(QuantityError::Syntax), "{bad}");
        }
        assert_eq!(
            canonicalize("9999999999999999999999999999999999999999999"),
            Err(QuantityError::Range)
        );
    }

    #[test]
    fn ceil_rounds_up_to_whole_units() {
        assert_eq!(
            Quantity::parse("96Mi").unwrap().ceil(),
            Some(96 * 1024 * 1024)
        );
        assert_eq!(Quantity::parse("1500m").unwrap().ceil(), Some(2));
        assert_eq!(Quantity::parse("1n").unwrap().ceil(), Some(1));
        assert_eq!(Quantity::parse("1G").unwrap().ceil(), Some(1_000_000_000));
    }

    #[test]
    fn mebibytes_are_written_with_the_largest_exact_binary_suffix() {
        for (mib, want) in [
            (0, "0"),
            (1, "1Mi"),
            (89, "89Mi"),
            (1023, "1023Mi"),
            (1024, "1Gi"),
            (1025, "1025Mi"),
            (1536, "1536Mi"),
            (2048, "2Gi"),
            (1152, "1152Mi"),
            (10240, "10Gi"),
            (1 << 20, "1Ti"),
            ((1 << 20) + 1024, "1025Gi"),
            (1 << 30, "1Pi"),
            (1 << 40, "1Ei"),
            (1 << 41, "2Ei"),
        ] {
            assert_eq!(mebibytes(mib).0, want, "{mib}");
            // Whatever is written reads back to the same amount, already canonical.
            let q = Quantity::parse(want).unwrap();
            assert_eq!(q.ceil(), Some(u128::try_from(mib).unwrap() << 20));
            assert_eq!(q.canonical().as_deref(), Ok(want));
        }
    }

    #[test]
    fn every_size_the_hook_writes_is_already_canonical() {
        // Memory requests and volumes of up to 128 GiB and beyond, MiB by MiB.
        for mib in (0..=(1 << 17)).chain([(1 << 20) - 1, 1 << 20, 3 << 20, (1 << 30) + 1024]) {
            let written = mebibytes(mib).0;
            let q = Quantity::parse(&written).unwrap();
            assert_eq!(q.canonical().as_deref(), Ok(written.as_str()), "{mib}");
            assert_eq!(q.ceil(), Some(u128::try_from(mib).unwrap() << 20), "{mib}");
            // The largest exact suffix: a whole number of the next unit is never left in Mi.
            let exact_gib = mib != 0 && mib % 1024 == 0;
            assert_eq!(
                written.ends_with("Mi"),
                mib != 0 && !exact_gib,
                "{mib}: {written}"
            );
        }
    }

    #[test]
    fn memory_requirements_in_canonical_binary_form() {
        let req = |mb: u128| Quantity::from_bytes((mb + 32) << 20).canonical().unwrap();
        assert_eq!(req(64), "96Mi");
        assert_eq!(req(256), "288Mi");
        assert_eq!(req(4096), "4128Mi");
        assert_eq!(req(992), "1Gi");
    }
}
