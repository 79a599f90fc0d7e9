//! `--priority 'LABEL=VALUE:WEIGHT'` (repeatable): node-label weights decide the rollout order,
//! after OpenKruise's `weightPriority` (a node's score is the sum of the weights of the terms its
//! labels match; higher goes first). Unlike Kruise, ties are broken by node name ascending, so the
//! order is deterministic.

use std::collections::BTreeMap;
use std::fmt;

/// Largest accepted weight (OpenKruise validates weights to 0..=100).
pub const MAX_WEIGHT: u32 = 100;

/// One `--priority` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityTerm {
    pub key: String,
    pub value: String,
    pub weight: u32,
}

impl fmt::Display for PriorityTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}:{}", self.key, self.value, self.weight)
    }
}

/// Why a `--priority` term was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid --priority value {input:?}: {reason}; expected LABEL=VALUE:WEIGHT with a Kubernetes label key and value and an integer weight from 0 to {MAX_WEIGHT} (e.g. 'topology.kubernetes.io/zone=edge-a:50')"
)]
pub struct PriorityParseError {
    pub input: String,
    pub reason: String,
}

impl std::str::FromStr for PriorityTerm {
    type Err = PriorityParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| PriorityParseError {
            input: input.to_string(),
            reason,
        };
        // Label keys and values never contain ':' so the weight is after the last one.
        let (selector, weight) = input
            .rsplit_once(':')
            .ok_or_else(|| fail("missing ':WEIGHT'".into()))?;
        let (key, value) = selector
            .split_once('=')
            .ok_or_else(|| fail("missing '=' between the label key and value".into()))?;
        crate::selector::label_key(key).map_err(fail)?;
        crate::selector::label_value(value).map_err(fail)?;
        if weight.is_empty() {
            return Err(fail("the weight is empty".into()));
        }
        if let Some(rest) = weight.strip_prefix('-')
            && !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(fail(format!("weight {weight} is negative")));
        }
        if !weight.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail(format!("weight {weight:?} is not an integer")));
        }
        let weight: u32 = match weight.parse() {
            Ok(w) if w <= MAX_WEIGHT => w,
            _ => return Err(fail(format!("weight {weight} is above {MAX_WEIGHT}"))),
        };
        Ok(PriorityTerm {
            key: key.to_string(),
            value: value.to_string(),
            weight,
        })
    }
}

/// A set of `--priority` terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Priority {
    terms: Vec<PriorityTerm>,
}

impl Priority {
    /// Builds the set, rejecting a `LABEL=VALUE` given twice (likely a mistake; say which
    /// weight you mean).
    pub fn new(terms: Vec<PriorityTerm>) -> Result<Self, PriorityParseError> {
        for (i, t) in terms.iter().enumerate() {
            if let Some(dup) = terms[..i]
                .iter()
                .find(|o| o.key == t.key && o.value == t.value)
            {
                return Err(PriorityParseError {
                    input: t.to_string(),
                    reason: format!("{}={} is already given as {dup}", t.key, t.value),
                });
            }
        }
        Ok(Priority { terms })
    }

    /// Parses each `--priority` argument.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Self, PriorityParseError> {
        let terms = args
            .iter()
            .map(|a| a.as_ref().parse())
            .collect::<Result<Vec<_>, _>>()?;
        Priority::new(terms)
    }

    pub fn terms(&self) -> &[PriorityTerm] {
        &self.terms
    }

    /// The sum of the weights of the terms `labels` match.
    pub fn score(&self, labels: &BTreeMap<String, String>) -> u64 {
        self.terms
            .iter()
            .filter(|t| labels.get(&t.key) == Some(&t.value))
            .map(|t| u64::from(t.weight))
            .sum()
    }

    /// Sorts `items` by score descending, then name ascending.
    pub fn sort_by_priority<T>(
        &self,
        items: &mut [T],
        name: impl Fn(&T) -> &str,
        labels: impl Fn(&T) -> &BTreeMap<String, String>,
    ) {
        let mut keyed: Vec<(u64, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (self.score(labels(it)), i))
            .collect();
        keyed.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| name(&items[a.1]).cmp(name(&items[b.1])))
        });
        apply_permutation(items, keyed.into_iter().map(|(_, i)| i).collect());
    }
}

fn apply_permutation<T>(items: &mut [T], mut perm: Vec<usize>) {
    // perm[j] = index of the element that goes to position j; cycle-follow in place.
    for start in 0..perm.len() {
        let mut cur = start;
        while perm[cur] != start {
            let next = perm[cur];
            items.swap(cur, next);
            perm[cur] = cur;
            cur = next;
        }
        perm[cur] = cur;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn good_terms() {
        let cases: &[(&str, &str, &str, u32)] = &[
            ("zone=a:10", "zone", "a", 10),
            (
                "topology.kubernetes.io/zone=edge-a:50",
                "topology.kubernetes.io/zone",
                "edge-a",
                50,
            ),
            ("canary=:0", "canary", "", 0),
            (
                "app.kubernetes.io/name=nginx_1.19:100",
                "app.kubernetes.io/name",
                "nginx_1.19",
                100,
            ),
            ("A=B:007", "A", "B", 7),
        ];
        for &(input, k, v, w) in cases {
            let t: PriorityTerm = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(
                (t.key.as_str(), t.value.as_str(), t.weight),
                (k, v, w),
                "{input}"
            );
        }
    }

    #[test]
    fn bad_terms() {
        let cases: &[(&str, &str)] = &[
            ("zone=a", "missing ':WEIGHT'"),
            ("zone:10", "missing '='"),
            ("=a:10", "label key name is empty"),
            ("zone=a:", "weight is empty"),
            ("zone=a:-1", "negative"),
            ("zone=a:1.5", "not an integer"),
            ("zone=a:ten", "not an integer"),
            ("zone=a:101", "above 100"),
            ("zone=a:99999999999", "above 100"),
            ("zone=a b:1", "contains ' '"),
            ("zo ne=a:1", "contains ' '"),
            ("-zone=a:1", "must start and end"),
            ("zone=a-:1", "must start and end"),
            ("/zone=a:1", "empty prefix"),
            ("Example.com/zone=a:1", "not a DNS subdomain"),
            ("a/b/c=d:1", "contains '/'"),
            ("zone=a=b:1", "contains '='"),
            (&"k=v:1".replace('v', &"v".repeat(64)), "longer than 63"),
        ];
        for &(input, want) in cases {
            let err = input.parse::<PriorityTerm>().expect_err(input);
            let msg = err.to_string();
            assert!(msg.contains(want), "{input:?}: {msg}");
            assert!(
                msg.contains("--priority") && msg.contains(&format!("{input:?}")),
                "{msg}"
            );
        }
        let dup = Priority::parse(&["zone=a:1", "zone=a:2"]).unwrap_err();
        assert!(dup.to_string().contains("already given"), "{dup}");
        // Same key, different values is fine.
        Priority::parse(&["zone=a:2", "zone=b:1"]).unwrap();
    }

    #[test]
    fn ordering_by_weight_then_name() {
        let p =
            Priority::parse(&["zone=a:50", "zone=b:10", "tier=gold:30", "tier=bronze:0"]).unwrap();
        let mut nodes = vec![
            ("n5", labels(&[])),
            ("n4", labels(&[("zone", "b")])),
            ("n3", labels(&[("zone", "a")])),
            ("n2", labels(&[("zone", "b"), ("tier", "gold")])),
            ("n1", labels(&[("zone", "a"), ("tier", "gold")])),
            ("n0", labels(&[("tier", "bronze")])),
            ("m9", labels(&[("zone", "b"), ("tier", "gold")])),
        ];
        p.sort_by_priority(&mut nodes, |n| n.0, |n| &n.1);
        let order: Vec<&str> = nodes.iter().map(|n| n.0).collect();
        // n1: 80, n3: 50, m9/n2: 40 (name), n4: 10, n0/n5: 0 (name)
        assert_eq!(order, ["n1", "n3", "m9", "n2", "n4", "n0", "n5"]);

        // No terms: plain name order.
        let mut plain = vec![("c", labels(&[])), ("a", labels(&[])), ("b", labels(&[]))];
        Priority::default().sort_by_priority(&mut plain, |n| n.0, |n| &n.1);
        assert_eq!(
            plain.iter().map(|n| n.0).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }
}
