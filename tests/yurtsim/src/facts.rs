//! Upstream facts (`tests/yurtsim/facts/*.yaml`, see its README) loaded once, and what follows
//! from them alone: which component and version an image runs, and whether a command line is
//! one that binary accepts (pflag's parsing rules, spf13/pflag@v1.0.5 `flag.go`:
//! `parseLongArg`, `parseShortArg`, and the `Set` of each value type).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::version::Version;
use serde_json::Value;

/// Every facts file, by file name. Adding a file here makes its component known to the sim.
const FILES: &[(&str, &str)] = &[
    (
        "yurthub-v0.6.1.yaml",
        include_str!("../facts/yurthub-v0.6.1.yaml"),
    ),
    (
        "yurthub-v1.6.1.yaml",
        include_str!("../facts/yurthub-v1.6.1.yaml"),
    ),
    (
        "yurthub-v1.7.0.yaml",
        include_str!("../facts/yurthub-v1.7.0.yaml"),
    ),
    (
        "node-servant-v1.6.1.yaml",
        include_str!("../facts/node-servant-v1.6.1.yaml"),
    ),
    (
        "node-servant-v1.7.0.yaml",
        include_str!("../facts/node-servant-v1.7.0.yaml"),
    ),
    (
        "yurt-manager-v1.6.1.yaml",
        include_str!("../facts/yurt-manager-v1.6.1.yaml"),
    ),
    (
        "yurt-manager-v1.7.0.yaml",
        include_str!("../facts/yurt-manager-v1.7.0.yaml"),
    ),
    (
        "yurt-manager-controllers-v1.6.1.yaml",
        include_str!("../facts/yurt-manager-controllers-v1.6.1.yaml"),
    ),
    (
        "yurt-manager-controllers-v1.7.0.yaml",
        include_str!("../facts/yurt-manager-controllers-v1.7.0.yaml"),
    ),
    (
        "yurt-controller-manager-v0.6.1.yaml",
        include_str!("../facts/yurt-controller-manager-v0.6.1.yaml"),
    ),
    (
        "yurt-tunnel-server-v0.6.1.yaml",
        include_str!("../facts/yurt-tunnel-server-v0.6.1.yaml"),
    ),
    (
        "yurt-tunnel-agent-v0.6.1.yaml",
        include_str!("../facts/yurt-tunnel-agent-v0.6.1.yaml"),
    ),
    (
        "yurt-app-manager-v0.4.0.yaml",
        include_str!("../facts/yurt-app-manager-v0.4.0.yaml"),
    ),
];

/// One facts file, parsed.
#[derive(Debug)]
pub struct Facts {
    pub file: &'static str,
    pub component: String,
    /// The tag as the facts file spells it (`v1.7.0`): file and binary names, log lines.
    pub version: String,
    /// The same, parsed: what code compares.
    pub release: Version,
    pub images: Vec<String>,
    pub doc: Value,
}

impl Facts {
    /// The flags the binary accepts, by long name.
    pub fn flags(&self) -> BTreeMap<String, FlagFact> {
        self.doc["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let name = f["name"].as_str()?.to_string();
                Some((
                    name.clone(),
                    FlagFact {
                        name,
                        shorthand: f["shorthand"].as_str().map(str::to_string),
                        kind: f["type"].as_str().unwrap_or("string").to_string(),
                        required: f["required"].as_bool().unwrap_or(false),
                    },
                ))
            })
            .collect()
    }

    /// What the binary does with a flag it does not know: exit code and its stderr lines.
    pub fn unknown_flag(&self) -> (i32, Vec<String>) {
        let u = &self.doc["unknownFlag"];
        let code = u["exitCode"].as_i64().unwrap_or(1) as i32;
        let lines = u["stderr"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|l| !l.starts_with('<'))
            .map(str::to_string)
            .collect();
        (code, lines)
    }
}

#[derive(Clone, Debug)]
pub struct FlagFact {
    pub name: String,
    pub shorthand: Option<String>,
    /// pflag value type: string, bool, int, duration, stringSlice, …
    pub kind: String,
    pub required: bool,
}

/// All facts files, parsed once. A file that does not parse is a bug in the repository: the
/// test `every_facts_file_parses_and_cites_its_sources` names it.
pub fn all() -> &'static [Facts] {
    static ALL: OnceLock<Vec<Facts>> = OnceLock::new();
    ALL.get_or_init(|| {
        FILES
            .iter()
            .filter_map(|(f, text)| parse(f, text).ok())
            .collect()
    })
}

fn parse(file: &'static str, text: &str) -> Result<Facts, String> {
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let s = |k: &str| {
        doc[k]
            .as_str()
            .map(str::to_string)
            .ok_or(format!("{file}: no `{k}`"))
    };
    Ok(Facts {
        file,
        component: s("component")?,
        release: Version::parse(&s("version")?)
            .ok_or(format!("{file}: `version` is not a version"))?,
        version: s("version")?,
        images: doc["images"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        doc,
    })
}

/// `openyurt/yurthub:v1.6.1` → ("openyurt/yurthub", "v1.6.1"), with the registry host dropped
/// (`docker.io/`, `registry.cn-hangzhou.aliyuncs.com/`, `ghcr.io/openyurtio/openyurt/`).
pub fn image_parts(image: &str) -> (String, String) {
    let (name, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, t),
        _ => (image, "latest"),
    };
    let name = name.split('@').next().unwrap_or(name);
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost")
    {
        parts.remove(0);
    }
    // the last two path segments: ghcr.io/openyurtio/openyurt/yurthub → openyurt/yurthub
    let repo = match parts.as_slice() {
        [.., org, bin] => format!("{org}/{bin}"),
        [bin] => format!("library/{bin}"),
        [] => String::new(),
    };
    (repo, tag.to_string())
}

/// The facts of the component an image runs, when the sim knows that image and version.
/// Several files may describe one binary (yurt-manager's startup and its controllers); the
/// first that carries flags is the component's command line.
pub fn for_image(image: &str) -> Vec<&'static Facts> {
    let (repo, tag) = image_parts(image);
    all()
        .iter()
        .filter(|f| {
            f.images.contains(&repo)
                && (f.version == tag
                    || f.doc["imageTags"]
                        .as_array()
                        .is_some_and(|t| t.iter().any(|x| x["tag"] == tag.as_str())))
        })
        .collect()
}

/// A command line pflag accepted: flag values by long name (the last one wins, as pflag's Set
/// does for scalars; slices accumulate) and positional arguments.
#[derive(Debug, Default)]
pub struct Parsed {
    pub values: BTreeMap<String, Vec<String>>,
    pub positional: Vec<String>,
}

impl Parsed {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }
}

/// Parses `args` as the binary's pflag FlagSet would; the error is the text pflag returns.
pub fn parse_args(flags: &BTreeMap<String, FlagFact>, args: &[String]) -> Result<Parsed, String> {
    let by_short: BTreeMap<&str, &FlagFact> = flags
        .values()
        .filter_map(|f| f.shorthand.as_deref().map(|s| (s, f)))
        .collect();
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.positional.extend(args[i..].iter().cloned());
            break;
        }
        let (flag, inline, shown) = if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if name.is_empty() || name.starts_with('-') || name.starts_with('=') {
                return Err(format!("bad flag syntax: {a}"));
            }
            let f = flags
                .get(name)
                .ok_or_else(|| format!("unknown flag: --{name}"))?;
            (f, value, format!("--{name}"))
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let c = &short[..short.chars().next().map_or(0, char::len_utf8)];
            let f = by_short
                .get(c)
                .copied()
                .ok_or_else(|| format!("unknown shorthand flag: '{c}' in -{short}"))?;
            let rest = &short[c.len()..];
            let value = if let Some(v) = rest.strip_prefix('=') {
                Some(v.to_string())
            } else if !rest.is_empty() && f.kind != "bool" {
                Some(rest.to_string())
            } else {
                None
            };
            (f, value, format!("-{c}"))
        } else {
            out.positional.push(a.clone());
            continue;
        };
        let value = match inline {
            Some(v) => v,
            None if flag.kind == "bool" => "true".into(),
            None => match args.get(i) {
                Some(v) => {
                    i += 1;
                    v.clone()
                }
                None => return Err(format!("flag needs an argument: {shown}")),
            },
        };
        check_value(flag, &value, &shown)?;
        out.values.entry(flag.name.clone()).or_default().push(value);
    }
    Ok(out)
}

/// The value types' own parsing (strconv and time.ParseDuration) and pflag's wrapping of
/// their errors: `invalid argument "x" for "--flag" flag: …`.
fn check_value(flag: &FlagFact, value: &str, shown: &str) -> Result<(), String> {
    let err = |why: String| {
        Err(format!(
            "invalid argument \"{value}\" for \"{shown}\" flag: {why}"
        ))
    };
    match flag.kind.as_str() {
        "bool" => match value {
            "1" | "t" | "T" | "true" | "TRUE" | "True" | "0" | "f" | "F" | "false" | "FALSE"
            | "False" => Ok(()),
            _ => err(format!(
                "strconv.ParseBool: parsing \"{value}\": invalid syntax"
            )),
        },
        "int" | "int32" | "int64" | "uint" | "uint32" | "uint64" => match value.parse::<i64>() {
            Ok(_) => Ok(()),
            Err(_) => err(format!(
                "strconv.ParseInt: parsing \"{value}\": invalid syntax"
            )),
        },
        "float32" | "float64" | "float" => match value.parse::<f64>() {
            Ok(_) => Ok(()),
            Err(_) => err(format!(
                "strconv.ParseFloat: parsing \"{value}\": invalid syntax"
            )),
        },
        "duration" => go_duration_ok(value).or_else(err),
        _ => Ok(()),
    }
}

/// time.ParseDuration's acceptance (overflow included).
fn go_duration_ok(s: &str) -> Result<(), String> {
    crate::util::parse_go_duration(s).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_facts_file_parses_and_cites_its_sources() {
        for (file, text) in FILES {
            let f = parse(file, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(!f.images.is_empty(), "{file}: no images");
            // every flag is cited
            for flag in f.doc["flags"].as_array().into_iter().flatten() {
                assert!(
                    flag["source"]
                        .as_str()
                        .is_some_and(|s| s.contains('@') && s.contains(':')),
                    "{file}: flag {} has no `repository@tag:path` source",
                    flag["name"]
                );
            }
        }
        assert_eq!(all().len(), FILES.len());
    }

    #[test]
    fn images_name_their_component_and_version() {
        for (image, repo, tag) in [
            ("openyurt/yurthub:v1.6.1", "openyurt/yurthub", "v1.6.1"),
            (
                "docker.io/openyurt/yurthub:v1.6.1",
                "openyurt/yurthub",
                "v1.6.1",
            ),
            (
                "registry.cn-hangzhou.aliyuncs.com/openyurt/yurt-manager:v1.6.1",
                "openyurt/yurt-manager",
                "v1.6.1",
            ),
            (
                "ghcr.io/openyurtio/openyurt/yurthub:v1.7.0",
                "openyurt/yurthub",
                "v1.7.0",
            ),
            ("busybox", "library/busybox", "latest"),
        ] {
            assert_eq!(
                image_parts(image),
                (repo.to_string(), tag.to_string()),
                "{image}"
            );
        }
        assert_eq!(
            for_image("openyurt/yurthub:v1.6.1")[0].file,
            "yurthub-v1.6.1.yaml"
        );
        assert!(for_image("openyurt/yurthub:v9.9.9").is_empty());
        assert!(for_image("busybox").is_empty());
    }

    #[test]
    fn command_lines_are_parsed_as_pflag_does() {
        let hub = &for_image("openyurt/yurthub:v1.6.1")[0];
        let flags = hub.flags();
        let ok = parse_args(
            &flags,
            &argv(&[
                "--v=2",
                "--bind-address=127.0.0.1",
                "--server-addr",
                "https://10.0.0.1:6443",
                "--node-name=edge-1",
                "--bootstrap-file=/var/lib/yurthub/bootstrap-hub.conf",
                "--working-mode=edge",
                "--enable-dummy-if",
                "-v",
                "4",
            ]),
        )
        .unwrap();
        assert_eq!(ok.get("server-addr"), Some("https://10.0.0.1:6443"));
        assert_eq!(ok.get("enable-dummy-if"), Some("true"));
        assert_eq!(ok.get("v"), Some("4"), "the last value wins");
        let cases: &[(&[&str], &str)] = &[
            (&["--nodepool"], "unknown flag: --nodepool"),
            // klog flags that component-base no longer registers
            (&["--logtostderr=true"], "unknown flag: --logtostderr"),
            (&["-x"], "unknown shorthand flag: 'x' in -x"),
            (
                &["--serve-port=ten"],
                "invalid argument \"ten\" for \"--serve-port\" flag: strconv.ParseInt: parsing \"ten\": invalid syntax",
            ),
            (
                &["--enable-dummy-if=yes"],
                "invalid argument \"yes\" for \"--enable-dummy-if\" flag: strconv.ParseBool: parsing \"yes\": invalid syntax",
            ),
            (
                &["--kubelet-health-grace-period=40"],
                "invalid argument \"40\" for \"--kubelet-health-grace-period\" flag: time: missing unit in duration \"40\"",
            ),
            (&["--node-name"], "flag needs an argument: --node-name"),
        ];
        for (args, want) in cases {
            assert_eq!(
                parse_args(&flags, &argv(args)).unwrap_err(),
                *want,
                "{args:?}"
            );
        }
        let (code, lines) = hub.unknown_flag();
        assert_eq!(code, 2, "yurthub's main panics on the cobra error");
        assert_eq!(lines[0], "Error: unknown flag: --%s");
    }
}
