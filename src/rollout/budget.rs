//! `--max-unavailable` and `--partition`: an integer or a percentage, resolved against the
//! number of target nodes the way OpenKruise resolves them.
//!
//! - `--max-unavailable`: a percentage rounds **up** (`GetScaledValueFromIntOrPercent(v, total,
//!   roundUp=true)`, as YurtStaticSet and Advanced DaemonSet do), so `10%` of 5 nodes is 1. Zero
//!   (`0`, `0%`) is rejected: it would never start a node (YurtStaticSet stalls silently on it).
//! - `--partition`: the number of nodes kept on the old revision. A percentage rounds **down**,
//!   like OpenKruise's Advanced DaemonSet (`roundUp=false`; the node-level controller, hence our
//!   model). CloneSet rounds partition up instead; we follow the DaemonSet. `0` is allowed.
//!
//! Both reject negatives, percentages above 100%, and anything that is not `DIGITS` or
//! `DIGITS%` exactly (no spaces, signs, decimals or other characters).

use std::fmt;

/// Which flag a value belongs to: it decides rounding, whether 0 is allowed, and error texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetFlag {
    MaxUnavailable,
    Partition,
}

impl BudgetFlag {
    pub fn flag(self) -> &'static str {
        match self {
            BudgetFlag::MaxUnavailable => "--max-unavailable",
            BudgetFlag::Partition => "--partition",
        }
    }

    fn accepted(self) -> &'static str {
        match self {
            BudgetFlag::MaxUnavailable => {
                "a positive integer (e.g. 3) or a percentage from 1% to 100% (e.g. 10%)"
            }
            BudgetFlag::Partition => {
                "a non-negative integer (e.g. 2) or a percentage from 0% to 100% (e.g. 20%)"
            }
        }
    }
}

/// Why a `--max-unavailable` / `--partition` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetParseError {
    #[error("invalid {} value {input:?}: expected {}", .flag.flag(), .flag.accepted())]
    Malformed { flag: BudgetFlag, input: String },

    #[error("invalid {} value {input:?}: must not be negative; expected {}", .flag.flag(), .flag.accepted())]
    Negative { flag: BudgetFlag, input: String },

    #[error("invalid {} value {input:?}: a percentage cannot exceed 100%; expected {}", .flag.flag(), .flag.accepted())]
    PercentTooLarge { flag: BudgetFlag, input: String },

    #[error("invalid {} value {input:?}: the number is too large; expected {}", .flag.flag(), .flag.accepted())]
    TooLarge { flag: BudgetFlag, input: String },

    #[error(
        "invalid --max-unavailable value {input:?}: 0 would never start a node and the rollout would stall; use at least 1 or 1%"
    )]
    Zero { input: String },
}

/// An integer or a percentage, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(u32),
    /// 0..=100
    Percent(u32),
}

impl fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrPercent::Int(n) => write!(f, "{n}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl IntOrPercent {
    /// Parses `DIGITS` or `DIGITS%` for `flag`, applying that flag's rules.
    pub fn parse_for(flag: BudgetFlag, input: &str) -> Result<Self, BudgetParseError> {
        let err = |mk: fn(BudgetFlag, String) -> BudgetParseError| mk(flag, input.to_string());
        let (digits, percent) = match input.strip_suffix('%') {
            Some(d) => (d, true),
            None => (input, false),
        };
        if let Some(rest) = digits.strip_prefix('-')
            && !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(err(|flag, input| BudgetParseError::Negative {
                flag,
                input,
            }));
        }
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err(|flag, input| BudgetParseError::Malformed {
                flag,
                input,
            }));
        }
        let value: u32 = digits
            .parse()
            .map_err(|_| err(|flag, input| BudgetParseError::TooLarge { flag, input }))?;
        if percent && value > 100 {
            return Err(err(|flag, input| BudgetParseError::PercentTooLarge {
                flag,
                input,
            }));
        }
        if flag == BudgetFlag::MaxUnavailable && value == 0 {
            return Err(BudgetParseError::Zero {
                input: input.to_string(),
            });
        }
        Ok(if percent {
            IntOrPercent::Percent(value)
        } else {
            IntOrPercent::Int(value)
        })
    }

    /// apimachinery's `GetScaledValueFromIntOrPercent`: an int as is, a percentage of `total`
    /// rounded up or down.
    pub fn scaled(self, total: usize, round_up: bool) -> usize {
        match self {
            IntOrPercent::Int(n) => n as usize,
            IntOrPercent::Percent(p) => {
                let num = p as u128 * total as u128;
                let v = if round_up {
                    num.div_ceil(100)
                } else {
                    num / 100
                };
                v as usize
            }
        }
    }
}

/// `--max-unavailable`: how many target nodes may be unavailable (upgrading, settling, or
/// already down) at any moment. Default `10%`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxUnavailable(IntOrPercent);

impl MaxUnavailable {
    pub fn value(self) -> IntOrPercent {
        self.0
    }

    /// The budget for `total` target nodes: a percentage rounds up; never more than `total`,
    /// and at least 1 when there is at least one node.
    pub fn resolve(self, total: usize) -> usize {
        self.0
            .scaled(total, true)
            .min(total)
            .max(usize::from(total > 0))
    }
}

impl Default for MaxUnavailable {
    fn default() -> Self {
        MaxUnavailable(IntOrPercent::Percent(10))
    }
}

impl std::str::FromStr for MaxUnavailable {
    type Err = BudgetParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IntOrPercent::parse_for(BudgetFlag::MaxUnavailable, s).map(MaxUnavailable)
    }
}

impl fmt::Display for MaxUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `--partition`: how many target nodes stay on the old revision (the last ones in rollout
/// order). Default 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition(IntOrPercent);

impl Partition {
    pub fn value(self) -> IntOrPercent {
        self.0
    }

    /// Nodes kept back out of `total`: a percentage rounds down; clamped to `total`.
    pub fn resolve(self, total: usize) -> usize {
        self.0.scaled(total, false).min(total)
    }
}

impl Default for Partition {
    fn default() -> Self {
        Partition(IntOrPercent::Int(0))
    }
}

impl std::str::FromStr for Partition {
    type Err = BudgetParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IntOrPercent::parse_for(BudgetFlag::Partition, s).map(Partition)
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_unavailable_good() {
        let cases: &[(&str, usize, usize)] = &[
            ("1", 10, 1),
            ("3", 10, 3),
            ("10%", 10, 1),
            ("10%", 5, 1),  // 0.5 rounds up
            ("10%", 11, 2), // 1.1 rounds up
            ("10%", 1000, 100),
            ("1%", 3, 1),
            ("100%", 7, 7),
            ("50", 7, 7), // clamped to the node count
            ("007%", 100, 7),
            ("25%", 0, 0),
        ];
        for &(input, total, want) in cases {
            let m: MaxUnavailable = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(m.resolve(total), want, "{input} of {total}");
        }
        assert_eq!(MaxUnavailable::default().resolve(1000), 100);
        assert_eq!(MaxUnavailable::default().to_string(), "10%");
    }

    #[test]
    fn partition_good_rounds_down() {
        let cases: &[(&str, usize, usize)] = &[
            ("0", 10, 0),
            ("0%", 10, 0),
            ("2", 10, 2),
            ("20", 10, 10),
            ("50%", 3, 1), // 1.5 rounds down (Advanced DaemonSet)
            ("10%", 9, 0), // 0.9 rounds down
            ("100%", 9, 9),
            ("99%", 10, 9),
        ];
        for &(input, total, want) in cases {
            let p: Partition = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(p.resolve(total), want, "{input} of {total}");
        }
    }

    #[test]
    fn bad_inputs_are_rejected_with_clear_messages() {
        use BudgetFlag::*;
        // (flag, input, expected fragment of the message)
        let cases: &[(BudgetFlag, &str, &str)] = &[
            (MaxUnavailable, "0", "0 would never start a node"),
            (MaxUnavailable, "0%", "0 would never start a node"),
            (MaxUnavailable, "000", "0 would never start a node"),
            (MaxUnavailable, "-1", "must not be negative"),
            (MaxUnavailable, "-10%", "must not be negative"),
            (MaxUnavailable, "101%", "cannot exceed 100%"),
            (MaxUnavailable, "1000%", "cannot exceed 100%"),
            (MaxUnavailable, "10 %", "expected a positive integer"),
            (MaxUnavailable, "%", "expected a positive integer"),
            (MaxUnavailable, "1.5", "expected a positive integer"),
            (MaxUnavailable, "1.5%", "expected a positive integer"),
            (MaxUnavailable, "abc", "expected a positive integer"),
            (MaxUnavailable, "", "expected a positive integer"),
            (MaxUnavailable, " 3", "expected a positive integer"),
            (MaxUnavailable, "3 ", "expected a positive integer"),
            (MaxUnavailable, "+3", "expected a positive integer"),
            (MaxUnavailable, "10%%", "expected a positive integer"),
            (MaxUnavailable, "%10", "expected a positive integer"),
            (MaxUnavailable, "0x10", "expected a positive integer"),
            (MaxUnavailable, "1e2", "expected a positive integer"),
            (MaxUnavailable, "--1", "expected a positive integer"),
            (MaxUnavailable, "-", "expected a positive integer"),
            (MaxUnavailable, "٣", "expected a positive integer"),
            (MaxUnavailable, "99999999999", "too large"),
            (Partition, "-1", "must not be negative"),
            (Partition, "-0%", "must not be negative"),
            (Partition, "150%", "cannot exceed 100%"),
            (Partition, "1.5", "expected a non-negative integer"),
            (Partition, "two", "expected a non-negative integer"),
            (Partition, "20 %", "expected a non-negative integer"),
        ];
        assert!(cases.len() >= 15);
        for &(flag, input, want) in cases {
            let err = IntOrPercent::parse_for(flag, input)
                .expect_err(&format!("{} {input:?} should be rejected", flag.flag()));
            let msg = err.to_string();
            assert!(msg.contains(want), "{input:?}: {msg}");
            assert!(
                msg.contains(flag.flag()),
                "{input:?}: message names the flag: {msg}"
            );
            assert!(
                msg.contains(&format!("{input:?}")),
                "{input:?}: message names the input: {msg}"
            );
        }
    }
}
