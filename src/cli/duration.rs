//! Go-style durations for flags: `500ms`, `30s`, `5m`, `1h30m`, `1.5s`.

use std::time::Duration;

/// Parses a positive duration made of `<number><unit>` parts (units `ms`, `s`, `m`, `h`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let hint = "expected a duration such as 500ms, 30s, 5m or 1h30m";
    if s.is_empty() {
        return Err(format!("empty; {hint}"));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(n);
        let value: f64 = num
            .parse()
            .map_err(|_| format!("{s:?}: {:?} is not a number; {hint}", num))?;
        let u = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(u);
        let secs = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("{s:?}: missing unit; {hint}")),
            other => return Err(format!("{s:?}: unknown unit {other:?}; {hint}")),
        };
        total += value * secs;
        rest = next;
    }
    if !(total > 0.0 && total < 1e9) {
        return Err(format!("{s:?}: must be greater than zero; {hint}"));
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "30", "s", "5 m", "3d", "0s", "-1s", "1..2s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
