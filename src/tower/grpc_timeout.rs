//! gRPC's timeout format (`grpc-timeout`): read and written, for the
//! deadline layers of both sides.

use std::fmt;
use std::time::Duration;

use http::{HeaderName, HeaderValue};

/// gRPC's deadline header.
pub(super) const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The most digits gRPC allows in a timeout's value.
const MAX_DIGITS: usize = 8;

/// The largest value of 8 digits.
const MAX_VALUE: u64 = 99_999_999;

/// Reads a `grpc-timeout` header's value: gRPC's `TimeoutValue
/// TimeoutUnit`, 1 to 8 ASCII digits, then one unit: `H` (hours), `M`
/// (minutes), `S` (seconds), `m` (milliseconds), `u` (microseconds) or `n`
/// (nanoseconds). `100m` is 100 ms, `5S` five seconds; `0n` is a deadline
/// already passed.
///
/// Nothing else is read: no sign, no space (HTTP's parsers strip the
/// spaces around a header's value), no second unit, no more than 8
/// digits (leading zeros count), no empty value. The largest,
/// `99999999H`, is a little over 11,000 years.
///
/// # Errors
///
/// [`InvalidTimeout`], whose message says what is wrong with the value.
///
/// # Examples
///
/// ```
/// use hashwheel::tower::parse_grpc_timeout;
/// use std::time::Duration;
///
/// assert_eq!(parse_grpc_timeout("100m"), Ok(Duration::from_millis(100)));
/// assert_eq!(parse_grpc_timeout(b"5S"), Ok(Duration::from_secs(5)));
/// let err = parse_grpc_timeout("100ms").unwrap_err();
/// assert_eq!(err.to_string(), "invalid grpc-timeout \"100ms\": a digit expected, found 'm'");
/// assert!(parse_grpc_timeout("999999999H").is_err()); // 9 digits
/// ```
pub fn parse_grpc_timeout(value: impl AsRef<[u8]>) -> Result<Duration, InvalidTimeout> {
    let value = value.as_ref();
    let invalid = |why| InvalidTimeout::new(value, why);
    let Some((&unit, digits)) = value.split_last() else {
        return Err(invalid(Why::Empty));
    };
    if let Some(&b) = digits.iter().find(|b| !b.is_ascii_digit()) {
        return Err(invalid(Why::NotADigit(b)));
    }
    if digits.is_empty() {
        return Err(invalid(if unit.is_ascii_digit() {
            Why::NoUnit
        } else {
            Why::NoDigits
        }));
    }
    if digits.len() > MAX_DIGITS {
        return Err(invalid(Why::TooManyDigits(digits.len())));
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Ok(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        b'0'..=b'9' => return Err(invalid(Why::NoUnit)),
        _ => return Err(invalid(Why::Unit(unit))),
    })
}

/// Writes `timeout` as a `grpc-timeout` value, rounded down in the finest
/// unit whose 8 digits hold it, so that a callee that reads it never
/// takes a later deadline than the time left: `n` up to 99,999,999 ns
/// (a tenth of a second), then `u`, `m`, `S`, `M`, and `H`; a timeout
/// beyond `99999999H` is written as that. The inverse of
/// [`parse_grpc_timeout`] for every value it writes.
///
/// [`PropagateDeadlineLayer`](super::PropagateDeadlineLayer) writes the
/// time left of a deadline scope with it.
///
/// # Examples
///
/// ```
/// use hashwheel::tower::{encode_grpc_timeout, parse_grpc_timeout};
/// use std::time::Duration;
///
/// assert_eq!(encode_grpc_timeout(Duration::from_millis(200)), "200000u");
/// // Rounded down: never a later deadline than the time left.
/// let left = Duration::from_nanos(123_456_789_123);
/// let sent = encode_grpc_timeout(left);
/// assert_eq!(sent, "123456m");
/// assert!(parse_grpc_timeout(&sent).unwrap() <= left);
/// ```
pub fn encode_grpc_timeout(timeout: Duration) -> HeaderValue {
    // In 64 bits up to 584 years (any timeout a scope holds), where the
    // divisions by the units are multiplications.
    let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
    let (mut value, unit) = if nanos <= MAX_VALUE {
        (nanos, b'n')
    } else if nanos / 1_000 <= MAX_VALUE {
        (nanos / 1_000, b'u')
    } else if nanos / 1_000_000 <= MAX_VALUE {
        (nanos / 1_000_000, b'm')
    } else if timeout.as_secs() <= MAX_VALUE {
        (timeout.as_secs(), b'S')
    } else if timeout.as_secs() / 60 <= MAX_VALUE {
        (timeout.as_secs() / 60, b'M')
    } else {
        ((timeout.as_secs() / 3600).min(MAX_VALUE), b'H')
    };
    // At most 8 digits and a unit: no allocation beyond the value's own.
    let mut buf = [0u8; MAX_DIGITS + 1];
    let mut at = MAX_DIGITS;
    buf[at] = unit;
    loop {
        at -= 1;
        buf[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    HeaderValue::from_bytes(&buf[at..]).expect("digits and a letter make a header value")
}

/// A header value that is not a timeout, from [`parse_grpc_timeout`]: its
/// message quotes the value (escaped) and says what is wrong with it.
#[derive(Clone, PartialEq, Eq)]
pub struct InvalidTimeout {
    /// The value as read, escaped and cut to a length a log takes.
    value: String,
    why: Why,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Empty,
    NoDigits,
    NoUnit,
    NotADigit(u8),
    TooManyDigits(usize),
    Unit(u8),
}

impl InvalidTimeout {
    fn new(value: &[u8], why: Why) -> InvalidTimeout {
        InvalidTimeout {
            value: escaped(value),
            why,
        }
    }
}

/// `value` as a log or an error message shows it: its first 32 bytes,
/// escaped as a byte string is (non-ASCII and control bytes as `\xNN`).
pub(super) fn escaped(value: &[u8]) -> String {
    const SHOWN: usize = 32;
    let mut out: String = value
        .iter()
        .take(SHOWN)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if value.len() > SHOWN {
        out.push_str("...");
    }
    out
}

impl fmt::Display for InvalidTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid grpc-timeout \"{}\": ", self.value)?;
        match self.why {
            Why::Empty => f.write_str("empty"),
            Why::NoDigits => f.write_str("no digits before the unit"),
            Why::NoUnit => f.write_str("no unit (H, M, S, m, u or n) after the digits"),
            Why::NotADigit(b) => write!(f, "a digit expected, found '{}'", escaped(&[b])),
            Why::TooManyDigits(n) => write!(f, "{n} digits, at most {MAX_DIGITS} allowed"),
            Why::Unit(b) => write!(f, "unknown unit '{}' (H, M, S, m, u or n)", escaped(&[b])),
        }
    }
}

impl fmt::Debug for InvalidTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("InvalidTimeout")
            .field(&self.to_string())
            .finish()
    }
}

impl std::error::Error for InvalidTimeout {}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Result<Duration, String> {
        parse_grpc_timeout(value).map_err(|e| e.to_string())
    }

    #[test]
    fn every_unit_is_read() {
        assert_eq!(parse("2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("3M"), Ok(Duration::from_secs(180)));
        assert_eq!(parse("5S"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("100m"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("250u"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("7n"), Ok(Duration::from_nanos(7)));
    }

    #[test]
    fn one_to_eight_digits_are_read_and_nine_are_not() {
        assert_eq!(parse("0n"), Ok(Duration::ZERO));
        assert_eq!(parse("0H"), Ok(Duration::ZERO));
        assert_eq!(parse("1S"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("00000001S"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("99999999n"), Ok(Duration::from_nanos(99_999_999)));
        assert_eq!(parse("99999999u"), Ok(Duration::from_micros(99_999_999)));
        assert_eq!(parse("99999999m"), Ok(Duration::from_millis(99_999_999)));
        assert_eq!(parse("99999999S"), Ok(Duration::from_secs(99_999_999)));
        assert_eq!(parse("99999999M"), Ok(Duration::from_secs(99_999_999 * 60)));
        assert_eq!(
            parse("99999999H"),
            Ok(Duration::from_secs(99_999_999 * 3600))
        );
        for unit in ["H", "M", "S", "m", "u", "n"] {
            assert_eq!(
                parse(&format!("100000000{unit}")),
                Err(format!(
                    "invalid grpc-timeout \"100000000{unit}\": 9 digits, at most 8 allowed"
                ))
            );
            assert!(
                parse(&format!("000000001{unit}")).is_err(),
                "leading zeros count"
            );
        }
        assert_eq!(
            parse("99999999999H"),
            Err("invalid grpc-timeout \"99999999999H\": 11 digits, at most 8 allowed".into())
        );
    }

    #[test]
    fn anything_else_is_refused_saying_why() {
        let cases = [
            ("", "empty"),
            ("abc", "a digit expected, found 'a'"),
            ("-5m", "a digit expected, found '-'"),
            ("+5m", "a digit expected, found '+'"),
            ("100ms", "a digit expected, found 'm'"),
            ("1.5S", "a digit expected, found '.'"),
            (" 5S", "a digit expected, found ' '"),
            ("5S ", "a digit expected, found 'S'"),
            ("5", "no unit (H, M, S, m, u or n) after the digits"),
            ("12345", "no unit (H, M, S, m, u or n) after the digits"),
            ("m", "no digits before the unit"),
            ("5s", "unknown unit 's' (H, M, S, m, u or n)"),
            ("5h", "unknown unit 'h' (H, M, S, m, u or n)"),
            ("5U", "unknown unit 'U' (H, M, S, m, u or n)"),
        ];
        for (value, why) in cases {
            assert_eq!(
                parse(value),
                Err(format!("invalid grpc-timeout \"{value}\": {why}")),
                "{value:?}"
            );
        }
        // Bytes that are not text are escaped in the message, and a long
        // value is cut.
        let err = parse_grpc_timeout(b"5\xffS").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid grpc-timeout \"5\\xffS\": a digit expected, found '\\xff'"
        );
        let long = "9".repeat(100) + "S";
        let err = parse(&long).unwrap_err();
        assert!(err.contains(&format!("\"{}...\"", "9".repeat(32))), "{err}");
        assert!(err.ends_with("100 digits, at most 8 allowed"), "{err}");
    }

    #[test]
    fn a_timeout_is_written_in_the_finest_unit_rounded_down() {
        let cases = [
            (Duration::ZERO, "0n"),
            (Duration::from_nanos(1), "1n"),
            (Duration::from_nanos(99_999_999), "99999999n"),
            (Duration::from_nanos(100_000_000), "100000u"),
            (Duration::from_nanos(100_000_999), "100000u"),
            (Duration::from_millis(200), "200000u"),
            (Duration::from_micros(99_999_999), "99999999u"),
            (Duration::from_micros(100_000_001), "100000m"),
            (Duration::from_millis(99_999_999), "99999999m"),
            (Duration::from_millis(100_000_000), "100000S"),
            (Duration::from_secs(99_999_999), "99999999S"),
            (Duration::from_secs(100_000_000), "1666666M"),
            (Duration::from_secs(99_999_999 * 60 + 59), "99999999M"),
            (Duration::from_secs(100_000_000 * 60), "1666666H"),
            (Duration::from_secs(99_999_999 * 3600), "99999999H"),
            (Duration::from_secs(100_000_000 * 3600), "99999999H"),
            (Duration::MAX, "99999999H"),
        ];
        for (timeout, written) in cases {
            let value = encode_grpc_timeout(timeout);
            assert_eq!(value, written, "{timeout:?}");
            let read = parse_grpc_timeout(&value).unwrap();
            assert!(read <= timeout, "{timeout:?} read back as {read:?}");
        }
    }

    #[test]
    fn what_is_written_reads_back_within_one_unit_below() {
        let mut d = Duration::from_nanos(1);
        // Up to 99999999H, beyond which every timeout is written as that.
        while d <= Duration::from_secs(99_999_999 * 3600) {
            let read = parse_grpc_timeout(encode_grpc_timeout(d)).unwrap();
            assert!(read <= d, "{d:?} read back as {read:?}");
            // The unit chosen holds at least 100,000 of it (the finer one
            // overflowed at 99,999,999, a thousand or sixty times as
            // many): it loses less than a hundred-thousandth of the value.
            assert!(d - read <= d / 100_000, "{d:?}: {read:?}");
            d = d * 3 + Duration::from_nanos(7);
        }
    }
}
