//! Server-side printing: `meta.k8s.io` Tables for `kubectl get`.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io`; a plain list leaves it
//! printing only NAME and AGE. This module produces the Tables kube-apiserver does: the
//! built-in printers' columns and cell logic for the kinds the sim serves (as in
//! `pkg/printers/internalversion`), the default `Name`/`Created At` table for built-in kinds
//! without a printer (roles, CRDs...), and CRD `additionalPrinterColumns` (default `Age`) for
//! custom resources.
//!
//! Like kube-apiserver, every column is always filled in, the `-o wide` ones included; those
//! carry `priority: 1` and kubectl hides them unless asked.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::api::registry::ResourceInfo;
use crate::util;

const DESC_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const DESC_CREATED: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const DESC_CONTAINERS: &str = "Names of each container in the template.";
const DESC_IMAGES: &str = "Images referenced by each container in the template.";

/// Whether an Accept header asks for a Table (`as=Table;g=meta.k8s.io;v=v1` or `v1beta1`).
/// Returns the Table's apiVersion for the first media range that does.
pub fn wants_table(accept: &str) -> Option<&'static str> {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        if media != "application/json" {
            continue;
        }
        let (mut is_table, mut group, mut version) = (false, "", "");
        for param in parts {
            let Some((k, v)) = param.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim() {
                "as" => is_table = v == "Table",
                "g" => group = v,
                "v" => version = v,
                _ => {}
            }
        }
        if is_table && group == "meta.k8s.io" {
            match version {
                "v1" => return Some("meta.k8s.io/v1"),
                "v1beta1" => return Some("meta.k8s.io/v1beta1"),
                _ => {}
            }
        }
    }
    None
}

/// A Table for these objects.
///
/// `include_object` is the `includeObject` query parameter: `None` leaves rows without an
/// object, `Object` embeds the whole object, anything else (`Metadata`, the default) embeds a
/// `PartialObjectMetadata` of `api_version`. `list_meta` becomes the Table's metadata
/// (`resourceVersion`, `continue`, `remainingItemCount`; empty entries are dropped).
pub fn to_table(
    res: &ResourceInfo,
    items: &[&Value],
    include_object: &str,
    list_meta: Value,
    api_version: &str,
    now: SystemTime,
) -> Value {
    let printer = printer_for(res);
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(printer.cells(obj, now)));
            if res.builtin
                && res.group.is_empty()
                && res.kind == "Pod"
                && let Some(conditions) = pod_row_conditions(obj)
            {
                row.insert("conditions".into(), conditions);
            }
            let object = match include_object {
                "None" => Value::Null,
                "Object" => (*obj).clone(),
                _ => json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": api_version,
                    "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
                }),
            };
            row.insert("object".into(), object);
            Value::Object(row)
        })
        .collect();
    let mut metadata = Map::new();
    if let Value::Object(m) = list_meta {
        for (k, v) in m {
            let empty = v.is_null() || v.as_str() == Some("");
            if !empty {
                metadata.insert(k, v);
            }
        }
    }
    json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": printer.columns.iter().map(Col::to_json).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// kube's `duration.HumanDuration` for a signed number of seconds: "5s", "3m2s", "4h",
/// "2d3h", "3y"...; "0s" for up to a second in the future, "<invalid>" beyond that.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

// ---------------------------------------------------------------------------------------------
// Columns and printers

struct Col {
    name: String,
    ty: String,
    format: String,
    description: String,
    priority: i32,
}

impl Col {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// A priority-0 column.
fn col(name: &str, ty: &str, description: &str) -> Col {
    Col {
        name: name.into(),
        ty: ty.into(),
        format: String::new(),
        description: description.into(),
        priority: 0,
    }
}

/// A `-o wide` (priority 1) column.
fn wide(name: &str, ty: &str, description: &str) -> Col {
    Col {
        priority: 1,
        ..col(name, ty, description)
    }
}

fn name_col() -> Col {
    Col {
        format: "name".into(),
        ..col("Name", "string", DESC_NAME)
    }
}

fn age_col() -> Col {
    col("Age", "string", DESC_CREATED)
}

type CellFn = fn(&Value, SystemTime) -> Vec<Value>;

enum Cells {
    Builtin(CellFn),
    /// CRD printer columns: (type, parsed JSONPath or None if it did not parse).
    Custom(Vec<(String, Option<Vec<Step>>)>),
}

struct Printer {
    columns: Vec<Col>,
    cells: Cells,
}

impl Printer {
    fn cells(&self, obj: &Value, now: SystemTime) -> Vec<Value> {
        match &self.cells {
            Cells::Builtin(f) => f(obj, now),
            Cells::Custom(cols) => {
                let mut cells = vec![json!(s(obj, &["metadata", "name"]))];
                for (ty, path) in cols {
                    let value = path.as_ref().and_then(|p| jsonpath_first(obj, p));
                    cells.push(match value {
                        None => Value::Null,
                        Some(v) => custom_cell(ty, v, now),
                    });
                }
                cells
            }
        }
    }
}

fn printer_for(res: &ResourceInfo) -> Printer {
    if !res.builtin {
        return custom_printer(res);
    }
    builtin_printer(&res.group, &res.kind).unwrap_or_else(|| Printer {
        columns: vec![name_col(), col("Created At", "date", DESC_CREATED)],
        cells: Cells::Builtin(default_cells),
    })
}

/// Custom resources: Name plus the CRD's printer columns (or `Age` when it has none).
fn custom_printer(res: &ResourceInfo) -> Printer {
    let defaults = [(
        "Age".to_string(),
        "date".to_string(),
        ".metadata.creationTimestamp".to_string(),
    )];
    let specs: &[(String, String, String)] = if res.printer_columns.is_empty() {
        &defaults
    } else {
        &res.printer_columns
    };
    let mut columns = vec![name_col()];
    let mut cells = Vec::new();
    for (name, ty, path) in specs {
        let description = if res.printer_columns.is_empty() {
            DESC_CREATED.to_string()
        } else {
            format!("Custom resource definition column (in JSONPath format): {path}")
        };
        columns.push(Col {
            name: name.clone(),
            ty: ty.clone(),
            format: String::new(),
            description,
            priority: 0,
        });
        cells.push((ty.clone(), parse_jsonpath(path)));
    }
    Printer {
        columns,
        cells: Cells::Custom(cells),
    }
}

fn builtin_printer(group: &str, kind: &str) -> Option<Printer> {
    let (columns, cells): (Vec<Col>, CellFn) = match (group, kind) {
        ("", "Pod") => (
            vec![
                name_col(),
                col(
                    "Ready",
                    "string",
                    "The aggregate readiness state of this pod for accepting traffic.",
                ),
                col(
                    "Status",
                    "string",
                    "The aggregate status of the containers in this pod.",
                ),
                col(
                    "Restarts",
                    "string",
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                ),
                age_col(),
                wide("IP", "string", "IP address allocated to the pod."),
                wide("Node", "string", "The node the pod is bound to."),
                wide(
                    "Nominated Node",
                    "string",
                    "The node the scheduler nominated for the pod while preempting.",
                ),
                wide(
                    "Readiness Gates",
                    "string",
                    "How many of the pod's readiness gates are true.",
                ),
            ],
            pod_cells,
        ),
        ("", "Node") => (
            vec![
                name_col(),
                col("Status", "string", "The status of the node"),
                col("Roles", "string", "The roles of the node"),
                age_col(),
                col("Version", "string", "Kubelet version reported by the node."),
                wide("Internal-IP", "string", "The node's internal IP address."),
                wide("External-IP", "string", "The node's external IP address."),
                wide("OS-Image", "string", "OS image reported by the node."),
                wide(
                    "Kernel-Version",
                    "string",
                    "Kernel version reported by the node.",
                ),
                wide(
                    "Container-Runtime",
                    "string",
                    "Container runtime version reported by the node.",
                ),
            ],
            node_cells,
        ),
        ("", "Namespace") => (
            vec![
                name_col(),
                col("Status", "string", "The status of the namespace"),
                age_col(),
            ],
            |o, now| vec![name(o), json!(s(o, &["status", "phase"])), age(o, now)],
        ),
        ("", "ConfigMap") => (
            vec![
                name_col(),
                col("Data", "string", "Number of keys in data and binaryData."),
                age_col(),
            ],
            |o, now| {
                let n = count(&o["data"]) + count(&o["binaryData"]);
                vec![name(o), json!(n), age(o, now)]
            },
        ),
        ("", "Secret") => (
            vec![
                name_col(),
                col(
                    "Type",
                    "string",
                    "Used to facilitate programmatic handling of secret data.",
                ),
                col("Data", "string", "Number of keys in data."),
                age_col(),
            ],
            |o, now| {
                vec![
                    name(o),
                    json!(s(o, &["type"])),
                    json!(count(&o["data"])),
                    age(o, now),
                ]
            },
        ),
        ("", "ServiceAccount") => (
            vec![
                name_col(),
                col(
                    "Secrets",
                    "string",
                    "Number of secrets listed for the service account.",
                ),
                age_col(),
            ],
            |o, now| vec![name(o), json!(count(&o["secrets"])), age(o, now)],
        ),
        ("", "Service") => (
            vec![
                name_col(),
                col("Type", "string", "How the Service is exposed."),
                col("Cluster-IP", "string", "The IP address of the service."),
                col(
                    "External-IP",
                    "string",
                    "External addresses of the service.",
                ),
                col("Port(s)", "string", "The ports exposed by the service."),
                age_col(),
                wide(
                    "Selector",
                    "string",
                    "Pods with these labels back the service.",
                ),
            ],
            service_cells,
        ),
        ("", "Endpoints") => (
            vec![
                name_col(),
                col(
                    "Endpoints",
                    "string",
                    "The addresses and ports of the endpoints.",
                ),
                age_col(),
            ],
            |o, now| vec![name(o), json!(format_endpoints(o)), age(o, now)],
        ),
        ("", "Event") | ("events.k8s.io", "Event") => (
            vec![
                col(
                    "Last Seen",
                    "string",
                    "The time at which the most recent occurrence of this event was recorded.",
                ),
                col("Type", "string", "Type of this event (Normal, Warning)."),
                col(
                    "Reason",
                    "string",
                    "Short, machine understandable reason for the transition.",
                ),
                col("Object", "string", "The object this event is about."),
                wide(
                    "Subobject",
                    "string",
                    "The part of the object the event is about.",
                ),
                wide("Source", "string", "The component reporting this event."),
                col(
                    "Message",
                    "string",
                    "A human-readable description of the status of this operation.",
                ),
                wide(
                    "First Seen",
                    "string",
                    "The time at which the event was first recorded.",
                ),
                wide(
                    "Count",
                    "string",
                    "The number of times this event has occurred.",
                ),
                Col {
                    format: "name".into(),
                    ..wide("Name", "string", DESC_NAME)
                },
            ],
            if group.is_empty() {
                core_event_cells
            } else {
                events_v1_cells
            },
        ),
        ("apps", "Deployment") => (
            vec![
                name_col(),
                col("Ready", "string", "Number of the pod with ready state"),
                col(
                    "Up-to-date",
                    "string",
                    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                ),
                col(
                    "Available",
                    "string",
                    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                ),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
                wide("Selector", "string", "Label selector for pods."),
            ],
            deployment_cells,
        ),
        ("apps", "ReplicaSet") => (
            vec![
                name_col(),
                col("Desired", "integer", "The number of desired replicas."),
                col(
                    "Current",
                    "integer",
                    "The most recently observed number of replicas.",
                ),
                col("Ready", "integer", "The number of ready replicas."),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
                wide("Selector", "string", "Label selector for pods."),
            ],
            replicaset_cells,
        ),
        ("apps", "DaemonSet") => (
            vec![
                name_col(),
                col(
                    "Desired",
                    "integer",
                    "The total number of nodes that should be running the daemon pod.",
                ),
                col(
                    "Current",
                    "integer",
                    "The number of nodes running at least one daemon pod and that are supposed to.",
                ),
                col(
                    "Ready",
                    "integer",
                    "The number of nodes that should be running the daemon pod and have one or more of it running and ready.",
                ),
                col(
                    "Up-to-date",
                    "integer",
                    "The total number of nodes that are running an updated daemon pod.",
                ),
                col(
                    "Available",
                    "integer",
                    "The number of nodes that should be running the daemon pod and have one or more of it running and available.",
                ),
                col(
                    "Node Selector",
                    "string",
                    "The pod template's node selector.",
                ),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
                wide("Selector", "string", "Label selector for pods."),
            ],
            daemonset_cells,
        ),
        ("apps", "StatefulSet") => (
            vec![
                name_col(),
                col("Ready", "string", "Number of the pod with ready state"),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
            ],
            |o, now| {
                let (names, images) = containers(&o["spec"]["template"]);
                vec![
                    name(o),
                    json!(format!(
                        "{}/{}",
                        int(o, &["status", "readyReplicas"]),
                        replicas(o)
                    )),
                    age(o, now),
                    json!(names),
                    json!(images),
                ]
            },
        ),
        ("apps", "ControllerRevision") => (
            vec![
                name_col(),
                col("Controller", "string", "Controller of the object"),
                col(
                    "Revision",
                    "string",
                    "Revision indicates the revision of the state represented by Data.",
                ),
                age_col(),
            ],
            controller_revision_cells,
        ),
        ("batch", "Job") => (
            vec![
                name_col(),
                col("Status", "string", "Status of the job."),
                col(
                    "Completions",
                    "string",
                    "The number of pods which reached phase Succeeded.",
                ),
                col("Duration", "string", "Time required to complete the job."),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
                wide("Selector", "string", "Label selector for pods."),
            ],
            job_cells,
        ),
        ("batch", "CronJob") => (
            vec![
                name_col(),
                col("Schedule", "string", "The schedule in Cron format."),
                col(
                    "Timezone",
                    "string",
                    "The time zone name for the given schedule.",
                ),
                col(
                    "Suspend",
                    "boolean",
                    "Whether subsequent executions are suspended.",
                ),
                col("Active", "integer", "The number of currently running jobs."),
                col(
                    "Last Schedule",
                    "string",
                    "When the job was last successfully scheduled.",
                ),
                age_col(),
                wide("Containers", "string", DESC_CONTAINERS),
                wide("Images", "string", DESC_IMAGES),
                wide("Selector", "string", "Label selector for pods."),
            ],
            cronjob_cells,
        ),
        ("coordination.k8s.io", "Lease") => (
            vec![
                name_col(),
                col(
                    "Holder",
                    "string",
                    "The identity of the holder of a current lease.",
                ),
                age_col(),
            ],
            |o, now| {
                vec![
                    name(o),
                    json!(s(o, &["spec", "holderIdentity"])),
                    age(o, now),
                ]
            },
        ),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => (
            vec![
                name_col(),
                col("Role", "string", "The role the binding grants."),
                age_col(),
                wide("Users", "string", "Users in the binding"),
                wide("Groups", "string", "Groups in the binding"),
                wide(
                    "ServiceAccounts",
                    "string",
                    "ServiceAccounts in the binding",
                ),
            ],
            binding_cells,
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => (
            vec![
                name_col(),
                col(
                    "Webhooks",
                    "integer",
                    "Webhooks indicates the number of webhooks registered in this configuration",
                ),
                age_col(),
            ],
            |o, now| vec![name(o), json!(count(&o["webhooks"])), age(o, now)],
        ),
        ("certificates.k8s.io", "CertificateSigningRequest") => (
            vec![
                name_col(),
                age_col(),
                col("SignerName", "string", "The requested signer."),
                col("Requestor", "string", "The user that created the request."),
                col(
                    "RequestedDuration",
                    "string",
                    "The requested duration of validity of the issued certificate.",
                ),
                col("Condition", "string", "The approval state of the request."),
            ],
            csr_cells,
        ),
        ("discovery.k8s.io", "EndpointSlice") => (
            vec![
                name_col(),
                col(
                    "AddressType",
                    "string",
                    "The type of address carried by this EndpointSlice.",
                ),
                col(
                    "Ports",
                    "string",
                    "The network ports exposed by each endpoint.",
                ),
                col("Endpoints", "string", "The endpoints' addresses."),
                age_col(),
            ],
            |o, now| {
                vec![
                    name(o),
                    json!(s(o, &["addressType"])),
                    json!(format_slice_ports(&o["ports"])),
                    json!(format_slice_endpoints(&o["endpoints"])),
                    age(o, now),
                ]
            },
        ),
        _ => return None,
    };
    Some(Printer {
        columns,
        cells: Cells::Builtin(cells),
    })
}

// ---------------------------------------------------------------------------------------------
// Small accessors

fn get<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |cur, key| &cur[*key])
}

/// A string field, "" when missing or not a string.
fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).as_str().unwrap_or_default()
}

/// An integer field, 0 when missing.
fn int(v: &Value, path: &[&str]) -> i64 {
    let v = get(v, path);
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .unwrap_or(0)
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Entries of an object or array.
fn count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}

fn name(o: &Value) -> Value {
    json!(s(o, &["metadata", "name"]))
}

fn age(o: &Value, now: SystemTime) -> Value {
    json!(since(get(o, &["metadata", "creationTimestamp"]), now))
}

fn time_of(v: &Value) -> Option<SystemTime> {
    v.as_str()
        .filter(|t| !t.is_empty())
        .and_then(util::parse_rfc3339)
}

/// Signed whole seconds from `from` to `to`, truncated toward zero.
fn secs_between(from: SystemTime, to: SystemTime) -> i64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// kube's `translateTimestampSince`: "<unknown>" for a missing timestamp.
fn since(ts: &Value, now: SystemTime) -> String {
    match time_of(ts) {
        Some(t) => human_duration(secs_between(t, now)),
        None => "<unknown>".into(),
    }
}

/// Spec replicas, defaulted to 1 like the API server does.
fn replicas(o: &Value) -> i64 {
    let r = &o["spec"]["replicas"];
    if r.is_null() { 1 } else { int(r, &[]) }
}

fn is_true(conditions: &Value, ty: &str) -> bool {
    items(conditions)
        .iter()
        .any(|c| c["type"] == ty && c["status"] == "True")
}

/// `labels.FormatLabels`: sorted `k=v` pairs, "<none>" when empty.
fn format_labels(v: &Value) -> String {
    let Some(m) = v.as_object().filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let sorted: BTreeMap<&String, &Value> = m.iter().collect();
    sorted
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",")
}

/// A LabelSelector's `labels.Selector` string: requirements sorted by key; "" when empty.
fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in items(&sel["matchExpressions"]) {
        let key = s(e, &["key"]).to_string();
        let mut values: Vec<&str> = items(&e["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let text = match s(e, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.FormatLabelSelector`: like [`selector_string`] but "<none>" when empty.
fn format_label_selector(sel: &Value) -> String {
    let s = selector_string(sel);
    if s.is_empty() { "<none>".into() } else { s }
}

/// Container names and images of a pod template, comma separated.
fn containers(template: &Value) -> (String, String) {
    let cs = items(&template["spec"]["containers"]);
    let names: Vec<&str> = cs.iter().map(|c| s(c, &["name"])).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let joined = list.join(",");
    if count > max {
        format!("{joined} + {} more...", count - max)
    } else if joined.is_empty() {
        "<unset>".into()
    } else {
        joined
    }
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

// ---------------------------------------------------------------------------------------------
// Per-kind cells

fn default_cells(o: &Value, _now: SystemTime) -> Vec<Value> {
    let created = time_of(get(o, &["metadata", "creationTimestamp"]))
        .map(util::rfc3339)
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".into());
    vec![name(o), json!(created)]
}

fn pod_row_conditions(pod: &Value) -> Option<Value> {
    let (reason, message) = match s(pod, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{
        "type": "Completed",
        "status": "True",
        "reason": reason,
        "message": message,
    }]))
}

fn pod_cells(pod: &Value, now: SystemTime) -> Vec<Value> {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let phase = s(status, &["phase"]);
    let mut reason = match s(status, &["reason"]) {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if items(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }

    let init_specs = items(&spec["initContainers"]);
    let restartable: BTreeSet<&str> = init_specs
        .iter()
        .filter(|c| c["restartPolicy"] == "Always")
        .map(|c| s(c, &["name"]))
        .collect();
    let total = items(&spec["containers"]).len() + restartable.len();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    let mut last_restart: Option<SystemTime> = None;
    let mut last_restartable_restart: Option<SystemTime> = None;
    let later = |acc: &mut Option<SystemTime>, cs: &Value| {
        if let Some(t) = time_of(&cs["lastState"]["terminated"]["finishedAt"])
            && acc.is_none_or(|a| a < t)
        {
            *acc = Some(t);
        }
    };

    let mut initializing = false;
    for (i, cs) in items(&status["initContainerStatuses"]).iter().enumerate() {
        let count = int(cs, &["restartCount"]);
        restarts += count;
        later(&mut last_restart, cs);
        let is_restartable = restartable.contains(s(cs, &["name"]));
        if is_restartable {
            restartable_restarts += count;
            later(&mut last_restartable_restart, cs);
        }
        let terminated = &cs["state"]["terminated"];
        let waiting = &cs["state"]["waiting"];
        if terminated.is_object() && int(terminated, &["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && cs["started"] == true {
            if cs["ready"] == true {
                ready += 1;
            }
            continue;
        }
        if terminated.is_object() {
            reason = match s(terminated, &["reason"]) {
                "" if int(terminated, &["signal"]) != 0 => {
                    format!("Init:Signal:{}", int(terminated, &["signal"]))
                }
                "" => format!("Init:ExitCode:{}", int(terminated, &["exitCode"])),
                r => format!("Init:{r}"),
            };
        } else if waiting.is_object()
            && !s(waiting, &["reason"]).is_empty()
            && s(waiting, &["reason"]) != "PodInitializing"
        {
            reason = format!("Init:{}", s(waiting, &["reason"]));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || is_true(&status["conditions"], "Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for cs in items(&status["containerStatuses"]).iter().rev() {
            restarts += int(cs, &["restartCount"]);
            later(&mut last_restart, cs);
            let terminated = &cs["state"]["terminated"];
            let waiting = &cs["state"]["waiting"];
            if waiting.is_object() && !s(waiting, &["reason"]).is_empty() {
                reason = s(waiting, &["reason"]).to_string();
            } else if terminated.is_object() && !s(terminated, &["reason"]).is_empty() {
                reason = s(terminated, &["reason"]).to_string();
            } else if terminated.is_object() {
                reason = if int(terminated, &["signal"]) != 0 {
                    format!("Signal:{}", int(terminated, &["signal"]))
                } else {
                    format!("ExitCode:{}", int(terminated, &["exitCode"]))
                };
            } else if cs["ready"] == true && cs["state"]["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if is_true(&status["conditions"], "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    let deleting = !pod["metadata"]["deletionTimestamp"].is_null();
    if deleting && s(status, &["reason"]) == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".into();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(secs_between(t, now)))
        }
        _ => restarts.to_string(),
    };

    let mut ip = items(&status["podIPs"])
        .first()
        .map(|p| s(p, &["ip"]))
        .unwrap_or_default();
    if ip.is_empty() {
        ip = s(status, &["podIP"]);
    }
    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let gates = items(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = items(&status["conditions"]);
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    vec![
        name(pod),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        age(pod, now),
        json!(or_none(ip)),
        json!(or_none(s(spec, &["nodeName"]))),
        json!(or_none(s(status, &["nominatedNodeName"]))),
        json!(readiness_gates),
    ]
}

fn node_cells(node: &Value, now: SystemTime) -> Vec<Value> {
    let ready = items(&node["status"]["conditions"])
        .iter()
        .rev()
        .find(|c| c["type"] == "Ready");
    let mut status = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"] == true {
        status.push("SchedulingDisabled");
    }

    let mut roles = BTreeSet::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };

    let address = |ty: &str| {
        items(&node["status"]["addresses"])
            .iter()
            .find(|a| a["type"] == ty)
            .map(|a| s(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".into())
    };
    let info = |field: &str| match s(node, &["status", "nodeInfo", field]) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        name(node),
        json!(status.join(",")),
        json!(roles),
        age(node, now),
        json!(s(node, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

fn service_cells(svc: &Value, now: SystemTime) -> Vec<Value> {
    let spec = &svc["spec"];
    let ty = match s(spec, &["type"]) {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = items(&spec["clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .or_else(|| spec["clusterIP"].as_str())
        .filter(|ip| !ip.is_empty())
        .unwrap_or("<none>");
    let external: Vec<&str> = items(&spec["externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match ty {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let lb: BTreeSet<&str> = items(&svc["status"]["loadBalancer"]["ingress"])
                .iter()
                .filter_map(|i| {
                    [s(i, &["ip"]), s(i, &["hostname"])]
                        .into_iter()
                        .find(|v| !v.is_empty())
                })
                .collect();
            let mut all: Vec<&str> = lb.into_iter().collect();
            all.extend(external);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => s(spec, &["externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = items(&spec["ports"])
        .iter()
        .map(|p| {
            let protocol = match s(p, &["protocol"]) {
                "" => "TCP",
                proto => proto,
            };
            let node_port = int(p, &["nodePort"]);
            if node_port > 0 {
                format!("{}:{node_port}/{protocol}", int(p, &["port"]))
            } else {
                format!("{}/{protocol}", int(p, &["port"]))
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        name(svc),
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(ports),
        age(svc, now),
        json!(format_labels(&spec["selector"])),
    ]
}

/// `formatEndpoints`: up to three `ip:port`s, then "+ N more...".
fn format_endpoints(ep: &Value) -> String {
    let subsets = items(&ep["subsets"]);
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0;
    for ss in subsets {
        let addresses = items(&ss["addresses"]);
        let ports = items(&ss["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(s(a, &["ip"]).to_string());
            }
            continue;
        }
        for p in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(s(a, &["ip"]), int(p, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn format_slice_ports(ports: &Value) -> String {
    let all = items(ports);
    let list: Vec<String> = all
        .iter()
        .take(3)
        .map(|p| {
            if let Some(n) = p["port"].as_i64() {
                n.to_string()
            } else if let Some(name) = p["name"].as_str() {
                name.to_string()
            } else {
                "*".to_string()
            }
        })
        .collect();
    list_with_more(&list, all.len(), 3)
}

fn format_slice_endpoints(endpoints: &Value) -> String {
    let all: Vec<String> = items(endpoints)
        .iter()
        .flat_map(|e| items(&e["addresses"]).iter().filter_map(Value::as_str))
        .map(str::to_string)
        .collect();
    let list: Vec<String> = all.iter().take(3).cloned().collect();
    list_with_more(&list, all.len(), 3)
}

/// Event fields under their core/v1 or events.k8s.io/v1 names.
struct EventFields<'a> {
    first: &'a Value,
    last: &'a Value,
    event_time: &'a Value,
    count: i64,
    series: &'a Value,
    regarding: &'a Value,
    source: &'a Value,
    /// JSON name of the reporting controller field (`reportingComponent` in core/v1).
    reporting_controller: &'static str,
    message: &'a str,
}

fn core_event_cells(ev: &Value, now: SystemTime) -> Vec<Value> {
    event_cells(
        ev,
        &EventFields {
            first: &ev["firstTimestamp"],
            last: &ev["lastTimestamp"],
            event_time: &ev["eventTime"],
            count: int(ev, &["count"]),
            series: &ev["series"],
            regarding: &ev["involvedObject"],
            source: &ev["source"],
            reporting_controller: "reportingComponent",
            message: s(ev, &["message"]),
        },
        now,
    )
}

fn events_v1_cells(ev: &Value, now: SystemTime) -> Vec<Value> {
    event_cells(
        ev,
        &EventFields {
            first: &ev["deprecatedFirstTimestamp"],
            last: &ev["deprecatedLastTimestamp"],
            event_time: &ev["eventTime"],
            count: int(ev, &["deprecatedCount"]),
            series: &ev["series"],
            regarding: &ev["regarding"],
            source: &ev["deprecatedSource"],
            reporting_controller: "reportingController",
            message: s(ev, &["note"]),
        },
        now,
    )
}

fn event_cells(ev: &Value, f: &EventFields, now: SystemTime) -> Vec<Value> {
    let first = if time_of(f.first).is_some() {
        since(f.first, now)
    } else {
        since(f.event_time, now)
    };
    let mut last = if time_of(f.last).is_some() {
        since(f.last, now)
    } else {
        first.clone()
    };
    let mut count = f.count;
    if f.series.is_object() {
        last = since(&f.series["lastObservedTime"], now);
        count = int(f.series, &["count"]);
    } else if count == 0 {
        count = 1;
    }
    let kind = s(f.regarding, &["kind"]).to_lowercase();
    let target = match s(f.regarding, &["name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let first_non_empty = |a: &str, b: &str| match s(f.source, &[a]) {
        "" => s(ev, &[b]).to_string(),
        v => v.to_string(),
    };
    let component = first_non_empty("component", f.reporting_controller);
    let host = first_non_empty("host", "reportingInstance");
    let source = if host.is_empty() {
        component
    } else {
        format!("{component}, {host}")
    };
    vec![
        json!(last),
        json!(s(ev, &["type"])),
        json!(s(ev, &["reason"])),
        json!(target),
        json!(s(f.regarding, &["fieldPath"])),
        json!(source),
        json!(f.message.trim()),
        json!(first),
        json!(count),
        name(ev),
    ]
}

fn deployment_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            int(o, &["status", "readyReplicas"]),
            replicas(o)
        )),
        json!(int(o, &["status", "updatedReplicas"])),
        json!(int(o, &["status", "availableReplicas"])),
        age(o, now),
        json!(names),
        json!(images),
        json!(selector_string(&o["spec"]["selector"])),
    ]
}

fn replicaset_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name(o),
        json!(replicas(o)),
        json!(int(o, &["status", "replicas"])),
        json!(int(o, &["status", "readyReplicas"])),
        age(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&o["spec"]["selector"])),
    ]
}

fn daemonset_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let st = &o["status"];
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name(o),
        json!(int(st, &["desiredNumberScheduled"])),
        json!(int(st, &["currentNumberScheduled"])),
        json!(int(st, &["numberReady"])),
        json!(int(st, &["updatedNumberScheduled"])),
        json!(int(st, &["numberAvailable"])),
        json!(format_labels(
            &o["spec"]["template"]["spec"]["nodeSelector"]
        )),
        age(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&o["spec"]["selector"])),
    ]
}

fn controller_revision_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let controller = items(&o["metadata"]["ownerReferences"])
        .iter()
        .find(|r| r["controller"] == true)
        .map(|r| {
            let group = s(r, &["apiVersion"])
                .rsplit_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            let kind = s(r, &["kind"]);
            let group_kind = match (group, kind) {
                ("", "") => return s(r, &["name"]).to_string(),
                ("", k) => k.to_string(),
                (g, k) => format!("{k}.{g}"),
            };
            format!("{}/{}", group_kind.to_lowercase(), s(r, &["name"]))
        })
        .unwrap_or_else(|| "<none>".into());
    vec![
        name(o),
        json!(controller),
        json!(int(o, &["revision"])),
        age(o, now),
    ]
}

fn job_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let spec = &o["spec"];
    let st = &o["status"];
    let succeeded = int(st, &["succeeded"]);
    let completions = if spec["completions"].is_null() {
        let parallelism = int(spec, &["parallelism"]);
        if parallelism > 1 {
            format!("{succeeded}/1 of {parallelism}")
        } else {
            format!("{succeeded}/1")
        }
    } else {
        format!("{succeeded}/{}", int(spec, &["completions"]))
    };
    let duration = match (time_of(&st["startTime"]), time_of(&st["completionTime"])) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(secs_between(start, now)),
        (Some(start), Some(end)) => human_duration(secs_between(start, end)),
    };
    // Like kube's hasJobCondition: the first condition of the type decides.
    let has = |ty: &str| {
        items(&st["conditions"])
            .iter()
            .find(|c| c["type"] == ty)
            .is_some_and(|c| c["status"] == "True")
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if !o["metadata"]["deletionTimestamp"].is_null() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(&spec["template"]);
    vec![
        name(o),
        json!(status),
        json!(completions),
        json!(duration),
        age(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&spec["selector"])),
    ]
}

fn cronjob_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let spec = &o["spec"];
    let last = if o["status"]["lastScheduleTime"].is_null() {
        "<none>".to_string()
    } else {
        since(&o["status"]["lastScheduleTime"], now)
    };
    let suspend = match spec["suspend"].as_bool() {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let tz = spec["timeZone"].as_str().unwrap_or("<none>");
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = containers(&job_spec["template"]);
    vec![
        name(o),
        json!(s(spec, &["schedule"])),
        json!(tz),
        json!(suspend),
        json!(count(&o["status"]["active"])),
        json!(last),
        age(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&job_spec["selector"])),
    ]
}

fn binding_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        s(o, &["roleRef", "kind"]),
        s(o, &["roleRef", "name"])
    );
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in items(&o["subjects"]) {
        let n = s(subject, &["name"]).to_string();
        match s(subject, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{n}", s(subject, &["namespace"]))),
            "User" => users.push(n),
            "Group" => groups.push(n),
            _ => {}
        }
    }
    vec![
        name(o),
        json!(role),
        age(o, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
}

fn csr_cells(o: &Value, now: SystemTime) -> Vec<Value> {
    let (mut approved, mut denied, mut failed) = (false, false, false);
    for c in items(&o["status"]["conditions"]) {
        match s(c, &["type"]) {
            "Approved" => approved = true,
            "Denied" => denied = true,
            "Failed" => failed = true,
            _ => {}
        }
    }
    let mut condition = if denied {
        "Denied"
    } else if approved {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if failed {
        condition.push_str(",Failed");
    }
    if !s(o, &["status", "certificate"]).is_empty() {
        condition.push_str(",Issued");
    }
    let signer = match s(o, &["spec", "signerName"]) {
        "" => "<none>",
        v => v,
    };
    let requested = if o["spec"]["expirationSeconds"].is_null() {
        "<none>".to_string()
    } else {
        human_duration(int(o, &["spec", "expirationSeconds"]))
    };
    vec![
        name(o),
        age(o, now),
        json!(signer),
        json!(s(o, &["spec", "username"])),
        json!(requested),
        json!(condition),
    ]
}

// ---------------------------------------------------------------------------------------------
// CRD printer columns: a JSONPath subset and kube's typed cells

/// One step of a JSONPath: `.field` / `['field']`, `[N]`, `[*]` / `.*`, `[?(@.a.b == lit)]`.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wildcard,
    Filter {
        path: Vec<Step>,
        op: Option<(bool, Value)>, // (equal?, literal); None: the path exists
    },
}

/// Parses a printer column's JSONPath (`.spec.replicas`, `{.status.conditions[0].type}`,
/// `.status.conditions[?(@.type=="Ready")].status`, `.metadata.labels.app\.kubernetes\.io/name`).
/// None for what this subset does not support (recursive descent, slices, unions...).
fn parse_jsonpath(path: &str) -> Option<Vec<Step>> {
    let mut p = path.trim();
    if let Some(inner) = p.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        p = inner.trim();
    }
    p = p.strip_prefix('$').unwrap_or(p);
    let chars: Vec<char> = p.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    // A leading bare field (`spec.replicas`) is read like `.spec.replicas`.
    if chars.first().is_some_and(|c| *c != '.' && *c != '[') {
        let (field, next) = read_field(&chars, 0);
        steps.push(Step::Field(field));
        i = next;
    }
    while i < chars.len() {
        match chars[i] {
            '.' => {
                if chars.get(i + 1) == Some(&'.') {
                    return None;
                }
                let (field, next) = read_field(&chars, i + 1);
                if field.is_empty() {
                    return None;
                }
                steps.push(if field == "*" {
                    Step::Wildcard
                } else {
                    Step::Field(field)
                });
                i = next;
            }
            '[' => {
                let close = find_bracket_end(&chars, i)?;
                let inner: String = chars[i + 1..close].iter().collect();
                steps.push(parse_bracket(inner.trim())?);
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

/// Reads a field name from `start` up to an unescaped `.` or `[`; `\.` is a literal dot.
fn read_field(chars: &[char], start: usize) -> (String, usize) {
    let mut field = String::new();
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                field.push(chars[i + 1]);
                i += 2;
            }
            '.' | '[' => break,
            c => {
                field.push(c);
                i += 1;
            }
        }
    }
    (field, i)
}

/// The index of the `]` closing the `[` at `open`, skipping quoted text and nested brackets.
fn find_bracket_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            },
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Some(Step::Field(name));
    }
    if let Ok(n) = inner.parse::<i64>() {
        return Some(Step::Index(n));
    }
    let expr = inner
        .strip_prefix('?')?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?
        .trim();
    let (lhs, op) = match ["==", "!="]
        .iter()
        .find_map(|op| expr.split_once(op).map(|(l, r)| (l, Some((*op, r)))))
    {
        Some((l, op)) => (l, op),
        None => (expr, None),
    };
    let sub = lhs.trim().strip_prefix('@')?;
    let path = if sub.is_empty() {
        Vec::new()
    } else {
        parse_jsonpath(sub)?
    };
    let op = match op {
        None => None,
        Some((op, rhs)) => Some((op == "==", parse_literal(rhs.trim())?)),
    };
    Some(Step::Filter { path, op })
}

fn unquote(s: &str) -> Option<String> {
    let first = s.chars().next()?;
    if (first == '\'' || first == '"') && s.len() >= 2 && s.ends_with(first) {
        Some(s[1..s.len() - 1].to_string())
    } else {
        None
    }
}

fn parse_literal(s: &str) -> Option<Value> {
    if let Some(text) = unquote(s) {
        return Some(Value::String(text));
    }
    match s {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        _ => s.parse::<f64>().ok().map(|f| json!(f)),
    }
}

fn literal_eq(value: &Value, literal: &Value) -> bool {
    match (value, literal) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn jsonpath_all<'a>(root: &'a Value, steps: &[Step]) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Field(f) => {
                    if let Some(x) = v.as_object().and_then(|m| m.get(f)) {
                        next.push(x);
                    }
                }
                Step::Index(n) => {
                    if let Some(a) = v.as_array() {
                        let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                        if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                            next.push(x);
                        }
                    }
                }
                Step::Wildcard => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { path, op } => {
                    for x in items(v) {
                        let found = jsonpath_all(x, path);
                        let keep = match op {
                            None => found.first().is_some_and(|f| !f.is_null() && **f != false),
                            Some((true, lit)) => found.iter().any(|f| literal_eq(f, lit)),
                            Some((false, lit)) => {
                                !found.is_empty() && !found.iter().any(|f| literal_eq(f, lit))
                            }
                        };
                        if keep {
                            next.push(x);
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

fn jsonpath_first<'a>(root: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    jsonpath_all(root, steps).into_iter().next()
}

/// kube's `cellForJSONValue` (and jsonpath printing for `string` columns).
fn custom_cell(ty: &str, v: &Value, now: SystemTime) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    match ty {
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, |i| json!(i)),
            _ => Value::Null,
        },
        "number" => v.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => v.as_bool().map_or(Value::Null, Value::Bool),
        "string" => json!(jsonpath_text(v)),
        "date" => match v.as_str() {
            Some("") => json!("<unknown>"),
            Some(t) => match util::parse_rfc3339(t) {
                Some(t) => json!(human_duration(secs_between(t, now))),
                None => json!("<invalid>"),
            },
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

/// How kube's jsonpath prints one value: strings bare, scalars like Go, objects and arrays
/// as JSON.
fn jsonpath_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(_) | Value::Object(_) => v.to_string(),
    }
}

/// Go's `%v` for a float64: shortest digits, exponent form below 1e-4 and from 1e6 on.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::api::registry::Registry;

    const NOW: &str = "2026-01-10T12:00:00Z";

    fn now() -> SystemTime {
        util::parse_rfc3339(NOW).unwrap()
    }

    /// `secs` seconds before NOW, as an RFC 3339 timestamp.
    fn ago(secs: u64) -> String {
        util::rfc3339(now() - Duration::from_secs(secs))
    }

    fn builtin(group: &str, version: &str, resource: &str) -> ResourceInfo {
        (*Registry::new().lookup(group, version, resource).unwrap()).clone()
    }

    fn custom(columns: &[(&str, &str, &str)]) -> ResourceInfo {
        ResourceInfo {
            group: "apps.openyurt.io".into(),
            version: "v1alpha1".into(),
            resource: "nodepools".into(),
            singular: "nodepool".into(),
            kind: "NodePool".into(),
            namespaced: false,
            short_names: vec![],
            categories: vec![],
            subresources: vec![],
            builtin: false,
            create_only: false,
            printer_columns: columns
                .iter()
                .map(|(n, t, p)| (n.to_string(), t.to_string(), p.to_string()))
                .collect(),
        }
    }

    fn table(res: &ResourceInfo, obj: &Value) -> Value {
        to_table(res, &[obj], "None", json!({}), "meta.k8s.io/v1", now())
    }

    fn column_names(t: &Value) -> Vec<String> {
        items(&t["columnDefinitions"])
            .iter()
            .map(|c| s(c, &["name"]).to_string())
            .collect()
    }

    fn wide_names(t: &Value) -> Vec<String> {
        items(&t["columnDefinitions"])
            .iter()
            .filter(|c| c["priority"] == 1)
            .map(|c| s(c, &["name"]).to_string())
            .collect()
    }

    fn cells(t: &Value) -> Vec<Value> {
        items(&t["rows"][0]["cells"]).to_vec()
    }

    /// Checks column names, which of them are wide, and the first row's cells.
    fn check(res: &ResourceInfo, obj: Value, names: &[&str], wide: &[&str], want: Value) {
        let t = table(res, &obj);
        assert_eq!(column_names(&t), names, "columns of {}", res.kind);
        assert_eq!(wide_names(&t), wide, "wide columns of {}", res.kind);
        let got = cells(&t);
        assert_eq!(
            got.len(),
            names.len(),
            "one cell per column for {}",
            res.kind
        );
        assert_eq!(Value::Array(got), want, "cells of {}", res.kind);
    }

    #[test]
    fn durations() {
        let cases: &[(i64, &str)] = &[
            (-5, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (182, "3m2s"),
            (599, "9m59s"),
            (600, "10m"),
            (661, "11m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (4 * 3600 + 5 * 60 + 7, "4h5m"),
            (8 * 3600 + 59 * 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (7 * 86400 + 23 * 3600, "7d23h"),
            (8 * 86400 + 5 * 3600, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (740 * 86400, "2y10d"),
            (8 * 365 * 86400 + 86400 * 30, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(*secs), *want, "{secs}s");
        }
    }

    #[test]
    fn accept_headers() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                Some("meta.k8s.io/v1"),
            ),
            (
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
                Some("meta.k8s.io/v1beta1"),
            ),
            (
                "application/json; as=Table; g=meta.k8s.io; v=v1",
                Some("meta.k8s.io/v1"),
            ),
            ("application/json", None),
            ("*/*", None),
            (
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                None,
            ),
            ("application/json;as=Table;v=v2;g=meta.k8s.io", None),
            ("application/json;as=Table;v=v1;g=apps", None),
            ("", None),
        ];
        for (accept, want) in cases {
            assert_eq!(wants_table(accept), *want, "{accept}");
        }
    }

    #[test]
    fn table_envelope_and_include_object() {
        let res = builtin("", "v1", "configmaps");
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7",
                         "creationTimestamp": ago(30)},
            "data": {"x": "1"},
        });
        let meta = json!({"resourceVersion": "42", "continue": "", "remainingItemCount": null});
        let t = to_table(
            &res,
            &[&cm],
            "Metadata",
            meta.clone(),
            "meta.k8s.io/v1",
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "42"}));
        assert_eq!(
            t["columnDefinitions"][0],
            json!({"name": "Name", "type": "string", "format": "name",
                   "description": DESC_NAME, "priority": 0})
        );
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": cm["metadata"]})
        );
        assert!(t["rows"][0].get("conditions").is_none());

        let t = to_table(
            &res,
            &[&cm],
            "Object",
            meta.clone(),
            "meta.k8s.io/v1beta1",
            now(),
        );
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["rows"][0]["object"], cm);

        let t = to_table(&res, &[&cm], "None", meta.clone(), "meta.k8s.io/v1", now());
        assert_eq!(t["rows"][0]["object"], Value::Null);

        let t = to_table(&res, &[&cm], "", Value::Null, "meta.k8s.io/v1", now());
        assert_eq!(t["metadata"], json!({}));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");

        let t = to_table(&res, &[], "", meta, "meta.k8s.io/v1", now());
        assert_eq!(t["rows"], json!([]));
        assert_eq!(column_names(&t), ["Name", "Data", "Age"]);
    }

    const POD_COLUMNS: &[&str] = &[
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ];
    const POD_WIDE: &[&str] = &["IP", "Node", "Nominated Node", "Readiness Gates"];

    fn pod(spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "creationTimestamp": ago(300)},
            "spec": spec,
            "status": status,
        })
    }

    fn one_container() -> Value {
        json!({"containers": [{"name": "c", "image": "busybox"}], "nodeName": "node-1"})
    }

    /// (Ready, Status, Restarts) of a pod.
    fn pod_summary(p: Value) -> (String, String, String) {
        let c = cells(&table(&builtin("", "v1", "pods"), &p));
        (
            c[1].as_str().unwrap().into(),
            c[2].as_str().unwrap().into(),
            c[3].as_str().unwrap().into(),
        )
    }

    #[test]
    fn pod_running_with_wide_columns() {
        let p = pod(
            json!({"containers": [{"name": "c", "image": "busybox"}], "nodeName": "node-1",
                   "readinessGates": [{"conditionType": "example.com/ready"},
                                      {"conditionType": "example.com/other"}]}),
            json!({"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                   "conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "example.com/ready", "status": "True"}],
                   "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                                          "state": {"running": {"startedAt": ago(200)}}}]}),
        );
        check(
            &builtin("", "v1", "pods"),
            p,
            POD_COLUMNS,
            POD_WIDE,
            json!([
                "p", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "1/2"
            ]),
        );
    }

    #[test]
    fn pod_statuses() {
        let c = one_container;
        let cases: Vec<(&str, Value, (&str, &str, &str))> = vec![
            (
                "pending, not scheduled",
                pod(
                    json!({"containers": [{"name": "c"}]}),
                    json!({"phase": "Pending"}),
                ),
                ("0/1", "Pending", "0"),
            ),
            (
                "container creating",
                pod(
                    c(),
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "c", "ready": false, "restartCount": 0,
                     "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                ),
                ("0/1", "ContainerCreating", "0"),
            ),
            (
                "completed",
                pod(
                    c(),
                    json!({"phase": "Succeeded", "containerStatuses": [
                    {"name": "c", "ready": false, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
                ),
                ("0/1", "Completed", "0"),
            ),
            (
                "error",
                pod(
                    c(),
                    json!({"phase": "Failed", "containerStatuses": [
                    {"name": "c", "ready": false, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
                ),
                ("0/1", "Error", "0"),
            ),
            (
                "terminated without a reason",
                pod(
                    c(),
                    json!({"phase": "Failed", "containerStatuses": [
                    {"name": "c", "state": {"terminated": {"exitCode": 3}}}]}),
                ),
                ("0/1", "ExitCode:3", "0"),
            ),
            (
                "killed by a signal",
                pod(
                    c(),
                    json!({"phase": "Failed", "containerStatuses": [
                    {"name": "c", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
                ),
                ("0/1", "Signal:9", "0"),
            ),
            (
                "crash loop, last restart 90s ago",
                pod(
                    c(),
                    json!({"phase": "Running", "containerStatuses": [
                    {"name": "c", "ready": false, "restartCount": 4,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                  "finishedAt": ago(90)}}}]}),
                ),
                ("0/1", "CrashLoopBackOff", "4 (90s ago)"),
            ),
            (
                "terminating",
                {
                    let mut p = pod(
                        c(),
                        json!({"phase": "Running", "containerStatuses": [
                        {"name": "c", "ready": true, "state": {"running": {}}}]}),
                    );
                    p["metadata"]["deletionTimestamp"] = json!(ago(1));
                    p
                },
                ("1/1", "Terminating", "0"),
            ),
            (
                "deleted after it finished",
                {
                    let mut p = pod(
                        c(),
                        json!({"phase": "Succeeded", "containerStatuses": [
                        {"name": "c", "state": {"terminated": {"exitCode": 0,
                                                               "reason": "Completed"}}}]}),
                    );
                    p["metadata"]["deletionTimestamp"] = json!(ago(1));
                    p
                },
                ("0/1", "Completed", "0"),
            ),
            (
                "node lost",
                {
                    let mut p = pod(c(), json!({"phase": "Running", "reason": "NodeLost"}));
                    p["metadata"]["deletionTimestamp"] = json!(ago(1));
                    p
                },
                ("0/1", "Unknown", "0"),
            ),
            (
                "evicted",
                pod(c(), json!({"phase": "Failed", "reason": "Evicted"})),
                ("0/1", "Evicted", "0"),
            ),
            (
                "scheduling gated",
                pod(
                    c(),
                    json!({"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ),
                ("0/1", "SchedulingGated", "0"),
            ),
            (
                "one of two completed, the other running and ready",
                pod(
                    json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                    json!({"phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True"}],
                           "containerStatuses": [
                        {"name": "a", "ready": false,
                         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                        {"name": "b", "ready": true, "state": {"running": {}}}]}),
                ),
                ("1/2", "Running", "0"),
            ),
            (
                "one of two completed, the other running, pod not ready",
                pod(
                    json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                    json!({"phase": "Running", "containerStatuses": [
                        {"name": "a", "ready": false,
                         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                        {"name": "b", "ready": true, "state": {"running": {}}}]}),
                ),
                ("1/2", "NotReady", "0"),
            ),
            (
                "init container running",
                pod(
                    json!({"initContainers": [{"name": "i1"}, {"name": "i2"}],
                           "containers": [{"name": "c"}]}),
                    json!({"phase": "Pending", "initContainerStatuses": [
                        {"name": "i1", "state": {"terminated": {"exitCode": 0,
                                                                "reason": "Completed"}}},
                        {"name": "i2", "state": {"running": {}}}]}),
                ),
                ("0/1", "Init:1/2", "0"),
            ),
            (
                "init container failed",
                pod(
                    json!({"initContainers": [{"name": "i1"}], "containers": [{"name": "c"}]}),
                    json!({"phase": "Pending", "initContainerStatuses": [
                        {"name": "i1", "restartCount": 2,
                         "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
                ),
                ("0/1", "Init:Error", "2"),
            ),
            (
                "init container crash looping",
                pod(
                    json!({"initContainers": [{"name": "i1"}], "containers": [{"name": "c"}]}),
                    json!({"phase": "Pending", "initContainerStatuses": [
                        {"name": "i1", "restartCount": 1,
                         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
                ),
                ("0/1", "Init:CrashLoopBackOff", "1"),
            ),
            (
                "sidecar (restartable init container) counts as a container",
                pod(
                    json!({"initContainers": [{"name": "side", "restartPolicy": "Always"}],
                           "containers": [{"name": "c"}]}),
                    json!({"phase": "Running",
                           "conditions": [{"type": "Initialized", "status": "True"}],
                           "initContainerStatuses": [
                        {"name": "side", "started": true, "ready": true, "restartCount": 1,
                         "state": {"running": {}}}],
                           "containerStatuses": [
                        {"name": "c", "ready": true, "state": {"running": {}}}]}),
                ),
                ("2/2", "Running", "1"),
            ),
        ];
        for (what, p, (ready, status, restarts)) in cases {
            assert_eq!(
                pod_summary(p),
                (ready.to_string(), status.to_string(), restarts.to_string()),
                "{what}"
            );
        }
    }

    #[test]
    fn pod_row_conditions_for_finished_pods() {
        let res = builtin("", "v1", "pods");
        let done = pod(one_container(), json!({"phase": "Succeeded"}));
        let t = table(&res, &done);
        assert_eq!(
            t["rows"][0]["conditions"],
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                    "message": "The pod has completed successfully."}])
        );
        let running = pod(one_container(), json!({"phase": "Running"}));
        assert!(table(&res, &running)["rows"][0].get("conditions").is_none());
    }

    const NODE_COLUMNS: &[&str] = &[
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
        "Internal-IP",
        "External-IP",
        "OS-Image",
        "Kernel-Version",
        "Container-Runtime",
    ];
    const NODE_WIDE: &[&str] = &[
        "Internal-IP",
        "External-IP",
        "OS-Image",
        "Kernel-Version",
        "Container-Runtime",
    ];

    #[test]
    fn nodes() {
        let res = builtin("", "v1", "nodes");
        let cp = json!({
            "metadata": {"name": "cp-1", "creationTimestamp": ago(2 * 86400 + 3 * 3600),
                         "labels": {"node-role.kubernetes.io/control-plane": "",
                                    "kubernetes.io/hostname": "cp-1"}},
            "spec": {},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"},
                               {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"},
                              {"type": "Hostname", "address": "cp-1"}],
                "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12",
                             "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7.27"},
            },
        });
        check(
            &res,
            cp,
            NODE_COLUMNS,
            NODE_WIDE,
            json!([
                "cp-1",
                "Ready",
                "control-plane",
                "2d3h",
                "v1.33.1",
                "172.18.0.2",
                "<none>",
                "Debian GNU/Linux 12",
                "6.1.0",
                "containerd://1.7.27"
            ]),
        );

        let cordoned = json!({
            "metadata": {"name": "edge-1", "creationTimestamp": ago(4 * 3600),
                         "labels": {"node-role.kubernetes.io/worker": "",
                                    "node-role.kubernetes.io/edge": "",
                                    "kubernetes.io/role": "gpu"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}],
                       "addresses": [{"type": "ExternalIP", "address": "1.2.3.4"}],
                       "nodeInfo": {"kubeletVersion": "v1.33.1"}},
        });
        check(
            &res,
            cordoned,
            NODE_COLUMNS,
            NODE_WIDE,
            json!([
                "edge-1",
                "NotReady,SchedulingDisabled",
                "edge,gpu,worker",
                "4h",
                "v1.33.1",
                "<none>",
                "1.2.3.4",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ]),
        );

        let fresh = json!({"metadata": {"name": "n"}, "status": {}});
        let c = cells(&table(&res, &fresh));
        assert_eq!(
            c[1..4],
            [json!("Unknown"), json!("<none>"), json!("<unknown>")]
        );
    }

    #[test]
    fn workloads() {
        let template = json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"},
                                    {"name": "sidecar", "image": "envoy:1"}],
                     "nodeSelector": {"kubernetes.io/os": "linux", "b": "2"}}});
        let deployment = json!({
            "metadata": {"name": "web", "creationTimestamp": ago(3600)},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"}},
                     "template": template},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        check(
            &builtin("apps", "v1", "deployments"),
            deployment,
            &[
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            &["Containers", "Images", "Selector"],
            json!([
                "web",
                "2/3",
                3,
                2,
                "60m",
                "web,sidecar",
                "nginx:1.27,envoy:1",
                "app=web,tier=fe"
            ]),
        );

        let rs = json!({
            "metadata": {"name": "web-5d9c", "creationTimestamp": ago(3600)},
            "spec": {"selector": {"matchLabels": {"app": "web"},
                                  "matchExpressions": [
                                      {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                      {"key": "canary", "operator": "DoesNotExist"}]},
                     "template": template},
            "status": {"replicas": 1, "readyReplicas": 1},
        });
        check(
            &builtin("apps", "v1", "replicasets"),
            rs,
            &[
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            &["Containers", "Images", "Selector"],
            json!([
                "web-5d9c",
                1,
                1,
                1,
                "60m",
                "web,sidecar",
                "nginx:1.27,envoy:1",
                "app=web,!canary,env in (dev,prod)"
            ]),
        );

        let ds = json!({
            "metadata": {"name": "agent", "creationTimestamp": ago(59)},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                       "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2},
        });
        check(
            &builtin("apps", "v1", "daemonsets"),
            ds,
            &[
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            &["Containers", "Images", "Selector"],
            json!([
                "agent",
                3,
                3,
                2,
                3,
                2,
                "b=2,kubernetes.io/os=linux",
                "59s",
                "web,sidecar",
                "nginx:1.27,envoy:1",
                "app=agent"
            ]),
        );

        let bare_ds = json!({"metadata": {"name": "x"}, "spec": {"template": {"spec": {}}}});
        let c = cells(&table(&builtin("apps", "v1", "daemonsets"), &bare_ds));
        assert_eq!(c[6], "<none>");
        assert_eq!(c[10], "<none>");

        let cr = json!({
            "metadata": {"name": "agent-6f7d", "creationTimestamp": ago(60),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                              "name": "agent", "controller": true}]},
            "revision": 2,
        });
        check(
            &builtin("apps", "v1", "controllerrevisions"),
            cr,
            &["Name", "Controller", "Revision", "Age"],
            &[],
            json!(["agent-6f7d", "daemonset.apps/agent", 2, "60s"]),
        );
        let orphan = json!({"metadata": {"name": "o"}, "revision": 1});
        let c = cells(&table(
            &builtin("apps", "v1", "controllerrevisions"),
            &orphan,
        ));
        assert_eq!(c[1], "<none>");
    }

    #[test]
    fn jobs() {
        let res = builtin("batch", "v1", "jobs");
        let names = [
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ];
        let wide = ["Containers", "Images", "Selector"];
        let job = |spec: Value, status: Value| {
            let mut spec = spec;
            spec["template"] = json!({"spec": {"containers": [{"name": "j", "image": "busybox"}]}});
            spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/job-name": "j"}});
            json!({"metadata": {"name": "j", "creationTimestamp": ago(600)},
                   "spec": spec, "status": status})
        };
        let complete = job(
            json!({"completions": 1, "parallelism": 1}),
            json!({"succeeded": 1, "startTime": ago(600), "completionTime": ago(418),
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                  {"type": "Complete", "status": "True"}]}),
        );
        check(
            &res,
            complete,
            &names,
            &wide,
            json!([
                "j",
                "Complete",
                "1/1",
                "3m2s",
                "10m",
                "j",
                "busybox",
                "batch.kubernetes.io/job-name=j"
            ]),
        );
        let cases: Vec<(Value, [&str; 3])> = vec![
            (
                job(
                    json!({"completions": 3}),
                    json!({"succeeded": 1, "startTime": ago(30)}),
                ),
                ["Running", "1/3", "30s"],
            ),
            (
                job(json!({"parallelism": 2}), json!({})),
                ["Running", "0/1 of 2", ""],
            ),
            (
                job(
                    json!({}),
                    json!({"failed": 1, "startTime": ago(100),
                    "completionTime": ago(40),
                    "conditions": [{"type": "Failed", "status": "True"}]}),
                ),
                ["Failed", "0/1", "60s"],
            ),
            (
                job(
                    json!({"suspend": true, "completions": 1}),
                    json!({"conditions": [
                    {"type": "Suspended", "status": "True"}]}),
                ),
                ["Suspended", "0/1", ""],
            ),
            (
                job(
                    json!({"completions": 1}),
                    json!({"conditions": [
                    {"type": "FailureTarget", "status": "True"}]}),
                ),
                ["FailureTarget", "0/1", ""],
            ),
            (
                {
                    let mut j = job(json!({"completions": 1}), json!({}));
                    j["metadata"]["deletionTimestamp"] = json!(ago(1));
                    j
                },
                ["Terminating", "0/1", ""],
            ),
        ];
        for (j, want) in cases {
            let c = cells(&table(&res, &j));
            assert_eq!(c[1..4], want.map(|w| json!(w)), "{j}");
        }
    }

    #[test]
    fn services() {
        let res = builtin("", "v1", "services");
        let names = [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector",
        ];
        let cluster_ip = json!({
            "metadata": {"name": "kubernetes", "creationTimestamp": ago(86400)},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": 6443}]},
        });
        check(
            &res,
            cluster_ip,
            &names,
            &["Selector"],
            json!([
                "kubernetes",
                "ClusterIP",
                "10.96.0.1",
                "<none>",
                "443/TCP",
                "24h",
                "<none>"
            ]),
        );
        let node_port = json!({
            "metadata": {"name": "web", "creationTimestamp": ago(60)},
            "spec": {"type": "NodePort", "clusterIP": "10.96.3.4",
                     "selector": {"app": "web"},
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                               {"port": 53, "protocol": "UDP"}]},
        });
        check(
            &res,
            node_port,
            &names,
            &["Selector"],
            json!([
                "web",
                "NodePort",
                "10.96.3.4",
                "<none>",
                "80:30080/TCP,53/UDP",
                "60s",
                "app=web"
            ]),
        );
        let lb = |status: Value| {
            json!({"metadata": {"name": "lb"},
                   "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.9.9"],
                            "externalIPs": ["5.6.7.8"], "ports": []},
                   "status": status})
        };
        let c = cells(&table(&res, &lb(json!({}))));
        assert_eq!(c[3], "5.6.7.8");
        assert_eq!(c[4], "<none>");
        let c = cells(&table(
            &res,
            &lb(
                json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "1.1.1.1"}]}}),
            ),
        ));
        assert_eq!(c[3], "1.1.1.1,lb.example,5.6.7.8");
        let pending = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}});
        assert_eq!(cells(&table(&res, &pending))[3], "<pending>");
        let headless = json!({"metadata": {"name": "h"},
            "spec": {"type": "ExternalName", "externalName": "example.com", "clusterIP": "None"}});
        let c = cells(&table(&res, &headless));
        assert_eq!(
            c[1..4],
            [json!("ExternalName"), json!("None"), json!("example.com")]
        );
    }

    #[test]
    fn config_and_identity_kinds() {
        let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(5)},
                        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        check(
            &builtin("", "v1", "configmaps"),
            cm,
            &["Name", "Data", "Age"],
            &[],
            json!(["cfg", 3, "5s"]),
        );
        let secret = json!({"metadata": {"name": "tok", "creationTimestamp": ago(5)},
                            "type": "kubernetes.io/service-account-token",
                            "data": {"token": "eA==", "ca.crt": "eA=="}});
        check(
            &builtin("", "v1", "secrets"),
            secret,
            &["Name", "Type", "Data", "Age"],
            &[],
            json!(["tok", "kubernetes.io/service-account-token", 2, "5s"]),
        );
        let ns = json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(3 * 86400)},
                        "status": {"phase": "Active"}});
        check(
            &builtin("", "v1", "namespaces"),
            ns,
            &["Name", "Status", "Age"],
            &[],
            json!(["kube-system", "Active", "3d"]),
        );
        let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(3 * 86400)}});
        check(
            &builtin("", "v1", "serviceaccounts"),
            sa,
            &["Name", "Secrets", "Age"],
            &[],
            json!(["default", 0, "3d"]),
        );
        let lease = json!({"metadata": {"name": "node-1", "creationTimestamp": ago(10)},
                           "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}});
        check(
            &builtin("coordination.k8s.io", "v1", "leases"),
            lease,
            &["Name", "Holder", "Age"],
            &[],
            json!(["node-1", "node-1", "10s"]),
        );
        let free = json!({"metadata": {"name": "x"}, "spec": {}});
        let c = cells(&table(
            &builtin("coordination.k8s.io", "v1", "leases"),
            &free,
        ));
        assert_eq!(c, [json!("x"), json!(""), json!("<unknown>")]);
    }

    #[test]
    fn events() {
        let names = [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name",
        ];
        let wide = ["Subobject", "Source", "First Seen", "Count", "Name"];
        let core = json!({
            "metadata": {"name": "p.1", "creationTimestamp": ago(600)},
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
            "reason": "BackOff", "type": "Warning", "message": "Back-off restarting\n",
            "firstTimestamp": ago(600), "lastTimestamp": ago(20), "count": 7,
            "source": {"component": "kubelet", "host": "node-1"},
        });
        check(
            &builtin("", "v1", "events"),
            core,
            &names,
            &wide,
            json!([
                "20s",
                "Warning",
                "BackOff",
                "pod/p",
                "spec.containers{c}",
                "kubelet, node-1",
                "Back-off restarting",
                "10m",
                7,
                "p.1"
            ]),
        );
        let new_style = json!({
            "metadata": {"name": "n.2"},
            "regarding": {"kind": "Node", "name": "node-1"},
            "reason": "Starting", "type": "Normal", "note": "Starting kubelet.",
            "eventTime": "2026-01-10T11:59:30.123456Z",
            "reportingController": "kubelet", "reportingInstance": "node-1",
        });
        check(
            &builtin("events.k8s.io", "v1", "events"),
            new_style,
            &names,
            &wide,
            json!([
                "30s",
                "Normal",
                "Starting",
                "node/node-1",
                "",
                "kubelet, node-1",
                "Starting kubelet.",
                "30s",
                1,
                "n.2"
            ]),
        );
        let series = json!({
            "metadata": {"name": "s"},
            "involvedObject": {"kind": "Namespace"},
            "eventTime": ago(300),
            "series": {"count": 5, "lastObservedTime": ago(3)},
            "reportingComponent": "ctrl", "reportingController": "ignored",
        });
        let c = cells(&table(&builtin("", "v1", "events"), &series));
        assert_eq!(c[0], "3s");
        assert_eq!(c[3], "namespace");
        assert_eq!(c[5], "ctrl");
        assert_eq!(c[7], "5m");
        assert_eq!(c[8], 5);
    }

    #[test]
    fn rbac_and_defaults() {
        let created = "2026-01-01T08:30:00Z";
        let role = json!({"metadata": {"name": "admin", "creationTimestamp": created},
                          "rules": []});
        for (resource, name) in [("clusterroles", "admin"), ("roles", "admin")] {
            check(
                &builtin("rbac.authorization.k8s.io", "v1", resource),
                role.clone(),
                &["Name", "Created At"],
                &[],
                json!([name, created]),
            );
        }
        let t = table(&builtin("rbac.authorization.k8s.io", "v1", "roles"), &role);
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        let crd = json!({"metadata": {"name": "nodepools.apps.openyurt.io",
                                      "creationTimestamp": created}});
        check(
            &builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
            crd,
            &["Name", "Created At"],
            &[],
            json!(["nodepools.apps.openyurt.io", created]),
        );
        let binding = json!({
            "metadata": {"name": "b", "creationTimestamp": ago(120)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "system:nodes"},
                {"kind": "ServiceAccount", "name": "yurt", "namespace": "kube-system"},
            ],
        });
        let names = ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"];
        let wide = ["Users", "Groups", "ServiceAccounts"];
        for resource in ["clusterrolebindings", "rolebindings"] {
            check(
                &builtin("rbac.authorization.k8s.io", "v1", resource),
                binding.clone(),
                &names,
                &wide,
                json!([
                    "b",
                    "ClusterRole/view",
                    "2m",
                    "alice, bob",
                    "system:nodes",
                    "kube-system/yurt"
                ]),
            );
        }
        let hooks = json!({"metadata": {"name": "h", "creationTimestamp": ago(7)},
                           "webhooks": [{"name": "a"}, {"name": "b"}]});
        for resource in [
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ] {
            check(
                &builtin("admissionregistration.k8s.io", "v1", resource),
                hooks.clone(),
                &["Name", "Webhooks", "Age"],
                &[],
                json!(["h", 2, "7s"]),
            );
        }
        let no_ts = json!({"metadata": {"name": "x"}});
        let c = cells(&table(
            &builtin("rbac.authorization.k8s.io", "v1", "roles"),
            &no_ts,
        ));
        assert_eq!(c[1], "0001-01-01T00:00:00Z");
    }

    #[test]
    fn networking_kinds() {
        let ep = json!({
            "metadata": {"name": "web", "creationTimestamp": ago(5)},
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                 "ports": [{"name": "http", "port": 80}, {"name": "m", "port": 9090}]},
            ],
        });
        check(
            &builtin("", "v1", "endpoints"),
            ep,
            &["Name", "Endpoints", "Age"],
            &[],
            json!([
                "web",
                "10.0.0.1:80,10.0.0.2:80,10.0.0.1:9090 + 1 more...",
                "5s"
            ]),
        );
        let headless = json!({"metadata": {"name": "h"},
                              "subsets": [{"addresses": [{"ip": "fd00::1"}]}]});
        let c = cells(&table(&builtin("", "v1", "endpoints"), &headless));
        assert_eq!(c[1], "fd00::1");
        let v6 = json!({"metadata": {"name": "h"},
                        "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 53}]}]});
        assert_eq!(
            cells(&table(&builtin("", "v1", "endpoints"), &v6))[1],
            "[fd00::1]:53"
        );
        let empty = json!({"metadata": {"name": "e"}});
        assert_eq!(
            cells(&table(&builtin("", "v1", "endpoints"), &empty))[1],
            "<none>"
        );

        let slice = json!({
            "metadata": {"name": "web-abcde", "creationTimestamp": ago(5)},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80}, {"name": "named"}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}],
        });
        check(
            &builtin("discovery.k8s.io", "v1", "endpointslices"),
            slice,
            &["Name", "AddressType", "Ports", "Endpoints", "Age"],
            &[],
            json!(["web-abcde", "IPv4", "80,named", "10.0.0.1,10.0.0.2", "5s"]),
        );
        let bare = json!({"metadata": {"name": "b"}, "addressType": "IPv4"});
        let c = cells(&table(
            &builtin("discovery.k8s.io", "v1", "endpointslices"),
            &bare,
        ));
        assert_eq!(c[2..4], [json!("<unset>"), json!("<unset>")]);
    }

    #[test]
    fn certificate_signing_requests() {
        let res = builtin("certificates.k8s.io", "v1", "certificatesigningrequests");
        let csr = json!({
            "metadata": {"name": "csr-abc", "creationTimestamp": ago(45)},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                     "username": "system:node:node-1", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}],
                       "certificate": "LS0t"},
        });
        check(
            &res,
            csr,
            &[
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition",
            ],
            &[],
            json!([
                "csr-abc",
                "45s",
                "kubernetes.io/kube-apiserver-client-kubelet",
                "system:node:node-1",
                "24h",
                "Approved,Issued"
            ]),
        );
        let pending = json!({"metadata": {"name": "p"}, "spec": {}});
        let c = cells(&table(&res, &pending));
        assert_eq!(c[2], "<none>");
        assert_eq!(c[4], "<none>");
        assert_eq!(c[5], "Pending");
        let denied = json!({"metadata": {"name": "d"}, "spec": {}, "status": {"conditions": [
            {"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}});
        assert_eq!(cells(&table(&res, &denied))[5], "Denied,Failed");
    }

    #[test]
    fn custom_resources_default_to_age() {
        let res = custom(&[]);
        let pool = json!({"metadata": {"name": "hangzhou", "creationTimestamp": ago(7200)}});
        check(
            &res,
            pool,
            &["Name", "Age"],
            &[],
            json!(["hangzhou", "120m"]),
        );
        let t = table(&res, &json!({"metadata": {"name": "x"}}));
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        assert_eq!(cells(&t)[1], Value::Null);
    }

    #[test]
    fn custom_resources_printer_columns() {
        let res = custom(&[
            ("Type", "string", ".spec.type"),
            ("ReadyNodes", "integer", ".status.readyNodeNum"),
            ("Ratio", "number", ".status.ratio"),
            ("Paused", "boolean", ".spec.paused"),
            (
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            ("First", "string", ".status.conditions[0].type"),
            (
                "Zone",
                "string",
                ".metadata.labels.topology\\.kubernetes\\.io/zone",
            ),
            (
                "App",
                "string",
                ".metadata.labels['app.kubernetes.io/name']",
            ),
            ("Nodes", "string", ".status.nodes"),
            ("Created", "date", ".metadata.creationTimestamp"),
            ("Missing", "string", ".status.nothing"),
            ("Mistyped", "integer", ".spec.type"),
        ]);
        let pool = json!({
            "metadata": {"name": "hz", "creationTimestamp": ago(90),
                         "labels": {"topology.kubernetes.io/zone": "z1",
                                    "app.kubernetes.io/name": "pool"}},
            "spec": {"type": "Edge", "paused": false},
            "status": {"readyNodeNum": 2, "ratio": 0.5,
                       "conditions": [{"type": "Synced", "status": "False"},
                                      {"type": "Ready", "status": "True"}],
                       "nodes": ["a", "b"]},
        });
        check(
            &res,
            pool,
            &[
                "Name",
                "Type",
                "ReadyNodes",
                "Ratio",
                "Paused",
                "Ready",
                "First",
                "Zone",
                "App",
                "Nodes",
                "Created",
                "Missing",
                "Mistyped",
            ],
            &[],
            json!([
                "hz",
                "Edge",
                2,
                0.5,
                false,
                "True",
                "Synced",
                "z1",
                "pool",
                "[\"a\",\"b\"]",
                "90s",
                null,
                null
            ]),
        );
        let t = table(&res, &json!({"metadata": {"name": "x"}}));
        assert_eq!(
            t["columnDefinitions"][1],
            json!({"name": "Type", "type": "string", "format": "",
                   "description": "Custom resource definition column (in JSONPath format): .spec.type",
                   "priority": 0})
        );
    }

    #[test]
    fn jsonpath_subset() {
        let doc = json!({
            "a": {"b": [{"k": "x", "n": 1, "v": "one"}, {"k": "y", "n": 2, "v": "two"}]},
            "flag": true, "num": 1.5, "big": 1234567.0, "tiny": 0.00001, "int": 3,
        });
        let eval = |p: &str| {
            parse_jsonpath(p)
                .and_then(|s| jsonpath_first(&doc, &s))
                .cloned()
        };
        assert_eq!(eval(".a.b[1].v"), Some(json!("two")));
        assert_eq!(eval("{.a.b[-1].k}"), Some(json!("y")));
        assert_eq!(eval("$.a.b[*].k"), Some(json!("x")));
        assert_eq!(eval(".a.b[?(@.k == 'y')].v"), Some(json!("two")));
        assert_eq!(eval(".a.b[?(@.n==2)].v"), Some(json!("two")));
        assert_eq!(eval(".a.b[?(@.k!=\"x\")].n"), Some(json!(2)));
        assert_eq!(eval(".a.b[?(@.v)].k"), Some(json!("x")));
        assert_eq!(eval(".a.b[?(@.k==\"z\")].v"), None);
        assert_eq!(eval(".a['b'][0].n"), Some(json!(1)));
        assert_eq!(eval("a.b[0].k"), Some(json!("x")));
        assert_eq!(eval(".a.b[5]"), None);
        assert_eq!(eval(".a..k"), None);
        assert_eq!(eval(".a.b[0:1]"), None);
        assert_eq!(jsonpath_text(&doc["num"]), "1.5");
        assert_eq!(jsonpath_text(&doc["big"]), "1.234567e+06");
        assert_eq!(jsonpath_text(&doc["tiny"]), "1e-05");
        assert_eq!(jsonpath_text(&doc["int"]), "3");
        assert_eq!(jsonpath_text(&doc["flag"]), "true");
        assert_eq!(
            jsonpath_text(&json!({"b": 1, "a": [1]})),
            r#"{"a":[1],"b":1}"#
        );
        assert_eq!(
            custom_cell("date", &json!("junk"), now()),
            json!("<invalid>")
        );
        assert_eq!(custom_cell("date", &json!(""), now()), json!("<unknown>"));
        assert_eq!(custom_cell("integer", &json!(2.9), now()), json!(2));
        assert_eq!(custom_cell("number", &json!(2), now()), json!(2.0));
        assert_eq!(custom_cell("boolean", &json!("true"), now()), Value::Null);
    }

    #[test]
    fn statefulsets_and_cronjobs() {
        let sts = json!({
            "metadata": {"name": "db", "creationTimestamp": ago(60)},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "pg", "image": "postgres:16"}]}}},
            "status": {"readyReplicas": 1},
        });
        let res = ResourceInfo {
            group: "apps".into(),
            kind: "StatefulSet".into(),
            resource: "statefulsets".into(),
            ..builtin("apps", "v1", "deployments")
        };
        check(
            &res,
            sts,
            &["Name", "Ready", "Age", "Containers", "Images"],
            &["Containers", "Images"],
            json!(["db", "1/2", "60s", "pg", "postgres:16"]),
        );
        let cj = json!({
            "metadata": {"name": "nightly", "creationTimestamp": ago(86400)},
            "spec": {"schedule": "0 3 * * *", "suspend": false,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                         {"name": "j", "image": "busybox"}]}}}}},
            "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(3600)},
        });
        let res = ResourceInfo {
            group: "batch".into(),
            kind: "CronJob".into(),
            resource: "cronjobs".into(),
            ..builtin("batch", "v1", "jobs")
        };
        check(
            &res,
            cj,
            &[
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            &["Containers", "Images", "Selector"],
            json!([
                "nightly",
                "0 3 * * *",
                "<none>",
                "False",
                1,
                "60m",
                "24h",
                "j",
                "busybox",
                "<none>"
            ]),
        );
    }
}
