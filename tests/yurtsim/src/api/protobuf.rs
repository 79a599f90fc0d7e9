//! Decoding of Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed clients (`kubectl create ...`, `kubectl auth can-i`, `kubectl create token`,
//! eviction during `kubectl drain`, ...) send request bodies as Kubernetes protobuf. yurtsim keeps
//! objects in their JSON form, so this module turns such a body into the object's JSON form. The
//! server still answers in JSON, which every client accepts.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` envelope:
//! `{1: TypeMeta{1: apiVersion, 2: kind}, 2: raw bytes, 3: contentEncoding, 4: contentType}`; the raw
//! bytes are the object's own message. The object is decoded with a small wire-format reader and a
//! static schema table ([`schema`]) transcribed from the `generated.proto` files of `k8s.io/api` and
//! `k8s.io/apimachinery` (field numbers and lowerCamel names, which equal the Go json tags).
//!
//! JSON mapping follows what the Go JSON encoder would produce for the same Go object:
//! * non-pointer scalar fields (Go `omitempty`) are omitted when they hold the zero value — gogo
//!   protobuf always writes them, so a present `""`/`0`/`false` is indistinguishable from unset;
//! * pointer fields (`*int32`, `*bool`, `*string`, ...) are kept whenever present, zero or not;
//! * embedded messages (non-pointer Go structs) are always emitted, possibly as `{}`;
//! * embedded Go structs that are inlined in JSON (`LocalObjectReference` in key selectors,
//!   `VolumeSource` in `Volume`, `ProbeHandler` in `Probe`) are merged into the parent object;
//! * special types: `metav1.Time` → RFC 3339 seconds (`null` for the zero time, like Go),
//!   `metav1.MicroTime` → RFC 3339 with 6 fractional digits, `resource.Quantity` → its string,
//!   `intstr.IntOrString` → number or string, `runtime.RawExtension` / `FieldsV1` → the embedded
//!   JSON, `metav1.Duration` → Go duration string, `bytes` → base64.
//!
//! Unknown field numbers are skipped (newer clients may send fields this table does not know).
//! Kinds without a schema are rejected with [`ProtobufError::Unsupported`], which the server
//! should answer with 415 so the client can retry as JSON.

use base64::Engine as _;
use serde_json::{Map, Value};

/// The 4-byte prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// True when a `Content-Type` header value denotes Kubernetes protobuf (parameters ignored).
pub fn is_protobuf_content_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// Why a protobuf body could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtobufError {
    /// The body does not start with the `k8s\0` magic or its envelope is malformed.
    #[error("yurtsim cannot decode protobuf body: {0}")]
    Envelope(String),
    /// The kind (or the envelope's content encoding) is not supported by this decoder.
    #[error("yurtsim cannot decode protobuf for {api_version} {kind}: {reason}")]
    Unsupported {
        api_version: String,
        kind: String,
        reason: String,
    },
    /// The object's bytes are malformed; `field` is the JSON path of the failing field.
    #[error("yurtsim cannot decode protobuf for {api_version} {kind}: field {field}: {reason}")]
    Malformed {
        api_version: String,
        kind: String,
        field: String,
        reason: String,
    },
}

impl ProtobufError {
    /// The HTTP status the server should answer with: 415 for unsupported kinds, 400 otherwise.
    pub fn http_status(&self) -> u16 {
        match self {
            ProtobufError::Unsupported { .. } => 415,
            _ => 400,
        }
    }
}

/// Decodes a Kubernetes protobuf request body (the `k8s\0` magic + runtime.Unknown envelope:
/// field 1 TypeMeta{1 apiVersion, 2 kind}, 2 raw bytes, 3 contentEncoding, 4 contentType) into
/// the object's JSON form, with apiVersion and kind set from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_at_depth(body, 0)
}

fn decode_at_depth(body: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    let envelope = body.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
        ProtobufError::Envelope("body does not start with the k8s\\0 protobuf magic".into())
    })?;
    let env = Envelope::parse(envelope).map_err(|e| ProtobufError::Envelope(e.to_string()))?;
    let unsupported = |reason: String| ProtobufError::Unsupported {
        api_version: env.api_version.clone(),
        kind: env.kind.clone(),
        reason,
    };
    if !env.content_encoding.is_empty() {
        return Err(unsupported(format!(
            "content encoding {:?} is not supported",
            env.content_encoding
        )));
    }
    if !env.content_type.is_empty() && !is_protobuf_content_type(&env.content_type) {
        return Err(unsupported(format!(
            "embedded content type {:?} is not supported",
            env.content_type
        )));
    }
    let message = top_level_message(&env.api_version, &env.kind).ok_or_else(|| {
        unsupported(
            "this kind is not supported by yurtsim's protobuf decoder; send it as JSON \
             (application/json) instead"
                .into(),
        )
    })?;
    let mut obj =
        decode_message(message, env.raw, depth + 1).map_err(|e| ProtobufError::Malformed {
            api_version: env.api_version.clone(),
            kind: env.kind.clone(),
            field: e.path(),
            reason: e.reason,
        })?;
    obj.insert("apiVersion".into(), Value::String(env.api_version));
    obj.insert("kind".into(), Value::String(env.kind));
    Ok(Value::Object(obj))
}

/// The decoded runtime.Unknown envelope.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

impl<'a> Envelope<'a> {
    fn parse(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut env = Envelope {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
            content_encoding: String::new(),
            content_type: String::new(),
        };
        let mut r = Reader::new(buf);
        while let Some((num, wire)) = r.field()? {
            match (num, wire) {
                (1, Wire::Len(tm)) => {
                    let mut t = Reader::new(tm);
                    while let Some((n, w)) = t.field().map_err(|e| e.at("typeMeta"))? {
                        match (n, w) {
                            (1, Wire::Len(b)) => {
                                env.api_version = utf8(b).map_err(|e| e.at("apiVersion"))?
                            }
                            (2, Wire::Len(b)) => env.kind = utf8(b).map_err(|e| e.at("kind"))?,
                            _ => {}
                        }
                    }
                }
                (2, Wire::Len(b)) => env.raw = b,
                (3, Wire::Len(b)) => {
                    env.content_encoding = utf8(b).map_err(|e| e.at("contentEncoding"))?
                }
                (4, Wire::Len(b)) => env.content_type = utf8(b).map_err(|e| e.at("contentType"))?,
                (1..=4, _) => {
                    return Err(DecodeError::new(
                        "unexpected wire type in runtime.Unknown envelope",
                    ));
                }
                _ => {}
            }
        }
        if env.kind.is_empty() {
            return Err(DecodeError::new("envelope has no kind"));
        }
        Ok(env)
    }
}

// ---------------------------------------------------------------------------------------------
// Wire format reader
// ---------------------------------------------------------------------------------------------

/// A decoding failure with the JSON path (innermost last) of the field being decoded.
#[derive(Debug)]
struct DecodeError {
    path: Vec<String>,
    reason: String,
}

impl DecodeError {
    fn new(reason: impl Into<String>) -> Self {
        DecodeError {
            path: Vec::new(),
            reason: reason.into(),
        }
    }

    /// Prefixes the path with an outer field name.
    fn at(mut self, field: impl Into<String>) -> Self {
        self.path.insert(0, field.into());
        self
    }

    fn path(&self) -> String {
        if self.path.is_empty() {
            "(top level)".into()
        } else {
            self.path.join(".").replace(".[", "[")
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.path(), self.reason)
        }
    }
}

/// One field value as it appears on the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Len(&'a [u8]),
    Fixed32,
}

impl Wire<'_> {
    fn describe(&self) -> &'static str {
        match self {
            Wire::Varint(_) => "varint",
            Wire::Fixed64 => "64-bit",
            Wire::Len(_) => "length-delimited",
            Wire::Fixed32 => "32-bit",
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(DecodeError::new("truncated varint"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::new("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                DecodeError::new(format!(
                    "truncated field: {n} bytes announced, {} left",
                    self.buf.len() - self.pos
                ))
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// The next field (number and value), or None at the end of the buffer.
    fn field(&mut self) -> Result<Option<(u32, Wire<'a>)>, DecodeError> {
        match self.key()? {
            None => Ok(None),
            Some((num, wire_type)) => Ok(Some((num, self.value(num, wire_type)?))),
        }
    }

    /// The next field's number and wire type, or None at the end of the buffer.
    fn key(&mut self) -> Result<Option<(u32, u8)>, DecodeError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let num = key >> 3;
        if num == 0 || num > u64::from(u32::MAX >> 3) {
            return Err(DecodeError::new(format!("invalid field number {num}")));
        }
        Ok(Some((num as u32, (key & 7) as u8)))
    }

    /// The value of a field whose key has just been read.
    fn value(&mut self, num: u32, wire_type: u8) -> Result<Wire<'a>, DecodeError> {
        Ok(match wire_type {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed64
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| DecodeError::new("length overflows"))?;
                Wire::Len(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            wt => {
                return Err(DecodeError::new(format!(
                    "unsupported wire type {wt} for field {num}"
                )));
            }
        })
    }
}

fn utf8(b: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|_| DecodeError::new("string is not valid UTF-8"))
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

/// The type of a field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Str,
    /// `bytes`, base64 in JSON.
    Bytes,
    Bool,
    I32,
    I64,
    /// A nested message from the schema table.
    Msg(&'static str),
    /// metav1.Time {1 seconds, 2 nanos} → RFC 3339 (seconds precision, like Go's JSON).
    Time,
    /// metav1.MicroTime → RFC 3339 with microseconds.
    MicroTime,
    /// resource.Quantity {1 string} → string.
    Quantity,
    /// intstr.IntOrString {1 type, 2 intVal, 3 strVal} → number or string.
    IntOrString,
    /// runtime.RawExtension {1 raw} → embedded JSON (no covered message embeds one yet).
    #[allow(dead_code)]
    RawExtension,
    /// metav1.FieldsV1 {1 raw} → embedded JSON.
    FieldsV1,
    /// metav1.Duration {1 duration ns} → Go duration string (no covered message uses one yet).
    #[allow(dead_code)]
    Duration,
    /// authorization ExtraValue {1 repeated string} → array of strings.
    ExtraValue,
}

/// How a field maps to JSON.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Non-pointer Go field: scalar zero values are omitted (Go `omitempty`).
    One(Ty),
    /// Pointer Go field: kept whenever present.
    Ptr(Ty),
    /// Repeated field (packed or unpacked for numeric types).
    Rep(Ty),
    /// `map<K, V>` as repeated entry messages {1 key, 2 value}.
    Map(Ty, Ty),
    /// Embedded Go struct inlined into the parent JSON object.
    Inline(&'static str),
}

/// A field of a message: number, JSON name, shape.
#[derive(Debug)]
struct F(u32, &'static str, Shape);

use Shape::{Inline, Map as MapOf, One, Ptr, Rep};
use Ty::{
    Bool, Bytes, Duration, ExtraValue, FieldsV1, I32, I64, IntOrString, MicroTime, Msg, Quantity,
    RawExtension, Str, Time,
};

/// The message describing the object for a top-level (apiVersion, kind).
fn top_level_message(api_version: &str, kind: &str) -> Option<&'static str> {
    // DeleteOptions is registered in every group version (and in meta.k8s.io/v1).
    if kind == "DeleteOptions" {
        return Some("DeleteOptions");
    }
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    if version != "v1" {
        return None;
    }
    Some(match (group, kind) {
        ("", "Namespace") => "Namespace",
        ("", "ConfigMap") => "ConfigMap",
        ("", "Secret") => "Secret",
        ("", "ServiceAccount") => "ServiceAccount",
        ("", "Service") => "Service",
        ("", "Pod") => "Pod",
        ("", "PodTemplate") => "PodTemplate",
        ("", "Binding") => "Binding",
        ("", "Node") => "Node",
        ("", "PersistentVolumeClaim") => "PersistentVolumeClaim",
        ("batch", "Job") => "Job",
        ("batch", "CronJob") => "CronJob",
        ("apps", "Deployment") => "Deployment",
        ("apps", "DaemonSet") => "DaemonSet",
        ("apps", "ReplicaSet") => "ReplicaSet",
        ("apps", "StatefulSet") => "StatefulSet",
        ("rbac.authorization.k8s.io", "Role") => "Role",
        ("rbac.authorization.k8s.io", "ClusterRole") => "ClusterRole",
        ("rbac.authorization.k8s.io", "RoleBinding") => "RoleBinding",
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => "RoleBinding",
        ("authorization.k8s.io", "SelfSubjectAccessReview") => "SelfSubjectAccessReview",
        ("authorization.k8s.io", "SelfSubjectRulesReview") => "SelfSubjectRulesReview",
        ("authorization.k8s.io", "SubjectAccessReview") => "SubjectAccessReview",
        ("authorization.k8s.io", "LocalSubjectAccessReview") => "SubjectAccessReview",
        ("authentication.k8s.io", "TokenRequest") => "TokenRequest",
        ("authentication.k8s.io", "TokenReview") => "TokenReview",
        ("authentication.k8s.io", "SelfSubjectReview") => "MetadataOnly",
        ("policy", "Eviction") => "Eviction",
        ("policy", "PodDisruptionBudget") => "PodDisruptionBudget",
        ("autoscaling", "Scale") => "Scale",
        ("coordination.k8s.io", "Lease") => "Lease",
        ("scheduling.k8s.io", "PriorityClass") => "PriorityClass",
        _ => return None,
    })
}

/// The fields of a message, by schema name.
fn schema(name: &str) -> Option<&'static [F]> {
    Some(match name {
        // ---- k8s.io/apimachinery/pkg/apis/meta/v1 ----
        "ObjectMeta" => &[
            F(1, "name", One(Str)),
            F(2, "generateName", One(Str)),
            F(3, "namespace", One(Str)),
            F(4, "selfLink", One(Str)),
            F(5, "uid", One(Str)),
            F(6, "resourceVersion", One(Str)),
            F(7, "generation", One(I64)),
            F(8, "creationTimestamp", One(Time)),
            F(9, "deletionTimestamp", Ptr(Time)),
            F(10, "deletionGracePeriodSeconds", Ptr(I64)),
            F(11, "labels", MapOf(Str, Str)),
            F(12, "annotations", MapOf(Str, Str)),
            F(13, "ownerReferences", Rep(Msg("OwnerReference"))),
            F(14, "finalizers", Rep(Str)),
            F(17, "managedFields", Rep(Msg("ManagedFieldsEntry"))),
        ],
        "OwnerReference" => &[
            F(5, "apiVersion", One(Str)),
            F(1, "kind", One(Str)),
            F(3, "name", One(Str)),
            F(4, "uid", One(Str)),
            F(6, "controller", Ptr(Bool)),
            F(7, "blockOwnerDeletion", Ptr(Bool)),
        ],
        "ManagedFieldsEntry" => &[
            F(1, "manager", One(Str)),
            F(2, "operation", One(Str)),
            F(3, "apiVersion", One(Str)),
            F(4, "time", Ptr(Time)),
            F(6, "fieldsType", One(Str)),
            F(7, "fieldsV1", Ptr(FieldsV1)),
            F(8, "subresource", One(Str)),
        ],
        "MetadataOnly" => &[F(1, "metadata", One(Msg("ObjectMeta")))],
        "LabelSelector" => &[
            F(1, "matchLabels", MapOf(Str, Str)),
            F(2, "matchExpressions", Rep(Msg("LabelSelectorRequirement"))),
        ],
        "LabelSelectorRequirement" => &[
            F(1, "key", One(Str)),
            F(2, "operator", One(Str)),
            F(3, "values", Rep(Str)),
        ],
        "DeleteOptions" => &[
            F(1, "gracePeriodSeconds", Ptr(I64)),
            F(2, "preconditions", Ptr(Msg("Preconditions"))),
            F(3, "orphanDependents", Ptr(Bool)),
            F(4, "propagationPolicy", Ptr(Str)),
            F(5, "dryRun", Rep(Str)),
            F(
                6,
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                Ptr(Bool),
            ),
        ],
        "Preconditions" => &[F(1, "uid", Ptr(Str)), F(2, "resourceVersion", Ptr(Str))],

        // ---- k8s.io/api/core/v1 ----
        "Namespace" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("NamespaceSpec"))),
        ],
        "NamespaceSpec" => &[F(1, "finalizers", Rep(Str))],
        "ConfigMap" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(4, "immutable", Ptr(Bool)),
            F(2, "data", MapOf(Str, Str)),
            F(3, "binaryData", MapOf(Str, Bytes)),
        ],
        "Secret" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(5, "immutable", Ptr(Bool)),
            F(2, "data", MapOf(Str, Bytes)),
            F(4, "stringData", MapOf(Str, Str)),
            F(3, "type", One(Str)),
        ],
        "ServiceAccount" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "secrets", Rep(Msg("ObjectReference"))),
            F(3, "imagePullSecrets", Rep(Msg("LocalObjectReference"))),
            F(4, "automountServiceAccountToken", Ptr(Bool)),
        ],
        "ObjectReference" => &[
            F(1, "kind", One(Str)),
            F(2, "namespace", One(Str)),
            F(3, "name", One(Str)),
            F(4, "uid", One(Str)),
            F(5, "apiVersion", One(Str)),
            F(6, "resourceVersion", One(Str)),
            F(7, "fieldPath", One(Str)),
        ],
        "LocalObjectReference" => &[F(1, "name", One(Str))],
        "TypedLocalObjectReference" => &[
            F(1, "apiGroup", Ptr(Str)),
            F(2, "kind", One(Str)),
            F(3, "name", One(Str)),
        ],
        "Binding" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "target", One(Msg("ObjectReference"))),
        ],
        "Node" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("NodeSpec"))),
        ],
        "NodeSpec" => &[
            F(1, "podCIDR", One(Str)),
            F(7, "podCIDRs", Rep(Str)),
            F(3, "providerID", One(Str)),
            F(4, "unschedulable", One(Bool)),
            F(5, "taints", Rep(Msg("Taint"))),
            F(2, "externalID", One(Str)),
        ],
        "Taint" => &[
            F(1, "key", One(Str)),
            F(2, "value", One(Str)),
            F(3, "effect", One(Str)),
            F(4, "timeAdded", Ptr(Time)),
        ],
        "Service" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("ServiceSpec"))),
        ],
        "ServiceSpec" => &[
            F(1, "ports", Rep(Msg("ServicePort"))),
            F(2, "selector", MapOf(Str, Str)),
            F(3, "clusterIP", One(Str)),
            F(18, "clusterIPs", Rep(Str)),
            F(4, "type", One(Str)),
            F(5, "externalIPs", Rep(Str)),
            F(7, "sessionAffinity", One(Str)),
            F(8, "loadBalancerIP", One(Str)),
            F(9, "loadBalancerSourceRanges", Rep(Str)),
            F(10, "externalName", One(Str)),
            F(11, "externalTrafficPolicy", One(Str)),
            F(12, "healthCheckNodePort", One(I32)),
            F(13, "publishNotReadyAddresses", One(Bool)),
            F(
                14,
                "sessionAffinityConfig",
                Ptr(Msg("SessionAffinityConfig")),
            ),
            F(19, "ipFamilies", Rep(Str)),
            F(17, "ipFamilyPolicy", Ptr(Str)),
            F(20, "allocateLoadBalancerNodePorts", Ptr(Bool)),
            F(21, "loadBalancerClass", Ptr(Str)),
            F(22, "internalTrafficPolicy", Ptr(Str)),
            F(23, "trafficDistribution", Ptr(Str)),
        ],
        "ServicePort" => &[
            F(1, "name", One(Str)),
            F(2, "protocol", One(Str)),
            F(6, "appProtocol", Ptr(Str)),
            F(3, "port", One(I32)),
            F(4, "targetPort", One(IntOrString)),
            F(5, "nodePort", One(I32)),
        ],
        "SessionAffinityConfig" => &[F(1, "clientIP", Ptr(Msg("ClientIPConfig")))],
        "ClientIPConfig" => &[F(1, "timeoutSeconds", Ptr(I32))],
        "Pod" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("PodSpec"))),
        ],
        "PodTemplate" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "template", One(Msg("PodTemplateSpec"))),
        ],
        "PodTemplateSpec" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("PodSpec"))),
        ],
        "PodSpec" => &[
            F(1, "volumes", Rep(Msg("Volume"))),
            F(20, "initContainers", Rep(Msg("Container"))),
            F(2, "containers", Rep(Msg("Container"))),
            F(3, "restartPolicy", One(Str)),
            F(4, "terminationGracePeriodSeconds", Ptr(I64)),
            F(5, "activeDeadlineSeconds", Ptr(I64)),
            F(6, "dnsPolicy", One(Str)),
            F(7, "nodeSelector", MapOf(Str, Str)),
            F(8, "serviceAccountName", One(Str)),
            F(9, "serviceAccount", One(Str)),
            F(21, "automountServiceAccountToken", Ptr(Bool)),
            F(10, "nodeName", One(Str)),
            F(11, "hostNetwork", One(Bool)),
            F(12, "hostPID", One(Bool)),
            F(13, "hostIPC", One(Bool)),
            F(27, "shareProcessNamespace", Ptr(Bool)),
            F(14, "securityContext", Ptr(Msg("PodSecurityContext"))),
            F(15, "imagePullSecrets", Rep(Msg("LocalObjectReference"))),
            F(16, "hostname", One(Str)),
            F(17, "subdomain", One(Str)),
            F(18, "affinity", Ptr(Msg("Affinity"))),
            F(19, "schedulerName", One(Str)),
            F(22, "tolerations", Rep(Msg("Toleration"))),
            F(23, "hostAliases", Rep(Msg("HostAlias"))),
            F(24, "priorityClassName", One(Str)),
            F(25, "priority", Ptr(I32)),
            F(26, "dnsConfig", Ptr(Msg("PodDNSConfig"))),
            F(28, "readinessGates", Rep(Msg("PodReadinessGate"))),
            F(29, "runtimeClassName", Ptr(Str)),
            F(30, "enableServiceLinks", Ptr(Bool)),
            F(31, "preemptionPolicy", Ptr(Str)),
            F(32, "overhead", MapOf(Str, Quantity)),
            F(
                33,
                "topologySpreadConstraints",
                Rep(Msg("TopologySpreadConstraint")),
            ),
            F(35, "setHostnameAsFQDN", Ptr(Bool)),
            F(36, "os", Ptr(Msg("PodOS"))),
            F(37, "hostUsers", Ptr(Bool)),
            F(38, "schedulingGates", Rep(Msg("PodSchedulingGate"))),
        ],
        "PodOS" => &[F(1, "name", One(Str))],
        "PodSchedulingGate" => &[F(1, "name", One(Str))],
        "PodReadinessGate" => &[F(1, "conditionType", One(Str))],
        "HostAlias" => &[F(1, "ip", One(Str)), F(2, "hostnames", Rep(Str))],
        "PodDNSConfig" => &[
            F(1, "nameservers", Rep(Str)),
            F(2, "searches", Rep(Str)),
            F(3, "options", Rep(Msg("PodDNSConfigOption"))),
        ],
        "PodDNSConfigOption" => &[F(1, "name", One(Str)), F(2, "value", Ptr(Str))],
        "Toleration" => &[
            F(1, "key", One(Str)),
            F(2, "operator", One(Str)),
            F(3, "value", One(Str)),
            F(4, "effect", One(Str)),
            F(5, "tolerationSeconds", Ptr(I64)),
        ],
        "TopologySpreadConstraint" => &[
            F(1, "maxSkew", One(I32)),
            F(2, "topologyKey", One(Str)),
            F(3, "whenUnsatisfiable", One(Str)),
            F(4, "labelSelector", Ptr(Msg("LabelSelector"))),
            F(5, "minDomains", Ptr(I32)),
            F(6, "nodeAffinityPolicy", Ptr(Str)),
            F(7, "nodeTaintsPolicy", Ptr(Str)),
            F(8, "matchLabelKeys", Rep(Str)),
        ],
        "Affinity" => &[
            F(1, "nodeAffinity", Ptr(Msg("NodeAffinity"))),
            F(2, "podAffinity", Ptr(Msg("PodAffinity"))),
            F(3, "podAntiAffinity", Ptr(Msg("PodAffinity"))),
        ],
        "NodeAffinity" => &[
            F(
                1,
                "requiredDuringSchedulingIgnoredDuringExecution",
                Ptr(Msg("NodeSelector")),
            ),
            F(
                2,
                "preferredDuringSchedulingIgnoredDuringExecution",
                Rep(Msg("PreferredSchedulingTerm")),
            ),
        ],
        "NodeSelector" => &[F(1, "nodeSelectorTerms", Rep(Msg("NodeSelectorTerm")))],
        "NodeSelectorTerm" => &[
            F(1, "matchExpressions", Rep(Msg("NodeSelectorRequirement"))),
            F(2, "matchFields", Rep(Msg("NodeSelectorRequirement"))),
        ],
        "NodeSelectorRequirement" => &[
            F(1, "key", One(Str)),
            F(2, "operator", One(Str)),
            F(3, "values", Rep(Str)),
        ],
        "PreferredSchedulingTerm" => &[
            F(1, "weight", One(I32)),
            F(2, "preference", One(Msg("NodeSelectorTerm"))),
        ],
        // PodAffinity and PodAntiAffinity have identical schemas.
        "PodAffinity" => &[
            F(
                1,
                "requiredDuringSchedulingIgnoredDuringExecution",
                Rep(Msg("PodAffinityTerm")),
            ),
            F(
                2,
                "preferredDuringSchedulingIgnoredDuringExecution",
                Rep(Msg("WeightedPodAffinityTerm")),
            ),
        ],
        "PodAffinityTerm" => &[
            F(1, "labelSelector", Ptr(Msg("LabelSelector"))),
            F(2, "namespaces", Rep(Str)),
            F(3, "topologyKey", One(Str)),
            F(4, "namespaceSelector", Ptr(Msg("LabelSelector"))),
            F(5, "matchLabelKeys", Rep(Str)),
            F(6, "mismatchLabelKeys", Rep(Str)),
        ],
        "WeightedPodAffinityTerm" => &[
            F(1, "weight", One(I32)),
            F(2, "podAffinityTerm", One(Msg("PodAffinityTerm"))),
        ],
        "PodSecurityContext" => &[
            F(1, "seLinuxOptions", Ptr(Msg("SELinuxOptions"))),
            F(
                8,
                "windowsOptions",
                Ptr(Msg("WindowsSecurityContextOptions")),
            ),
            F(2, "runAsUser", Ptr(I64)),
            F(6, "runAsGroup", Ptr(I64)),
            F(3, "runAsNonRoot", Ptr(Bool)),
            F(4, "supplementalGroups", Rep(I64)),
            F(5, "fsGroup", Ptr(I64)),
            F(7, "sysctls", Rep(Msg("Sysctl"))),
            F(9, "fsGroupChangePolicy", Ptr(Str)),
            F(10, "seccompProfile", Ptr(Msg("SeccompProfile"))),
            F(11, "appArmorProfile", Ptr(Msg("AppArmorProfile"))),
        ],
        "SecurityContext" => &[
            F(1, "capabilities", Ptr(Msg("Capabilities"))),
            F(2, "privileged", Ptr(Bool)),
            F(3, "seLinuxOptions", Ptr(Msg("SELinuxOptions"))),
            F(
                10,
                "windowsOptions",
                Ptr(Msg("WindowsSecurityContextOptions")),
            ),
            F(4, "runAsUser", Ptr(I64)),
            F(8, "runAsGroup", Ptr(I64)),
            F(5, "runAsNonRoot", Ptr(Bool)),
            F(6, "readOnlyRootFilesystem", Ptr(Bool)),
            F(7, "allowPrivilegeEscalation", Ptr(Bool)),
            F(9, "procMount", Ptr(Str)),
            F(11, "seccompProfile", Ptr(Msg("SeccompProfile"))),
            F(12, "appArmorProfile", Ptr(Msg("AppArmorProfile"))),
        ],
        "Capabilities" => &[F(1, "add", Rep(Str)), F(2, "drop", Rep(Str))],
        "SELinuxOptions" => &[
            F(1, "user", One(Str)),
            F(2, "role", One(Str)),
            F(3, "type", One(Str)),
            F(4, "level", One(Str)),
        ],
        "WindowsSecurityContextOptions" => &[
            F(1, "gmsaCredentialSpecName", Ptr(Str)),
            F(2, "gmsaCredentialSpec", Ptr(Str)),
            F(3, "runAsUserName", Ptr(Str)),
            F(4, "hostProcess", Ptr(Bool)),
        ],
        // SeccompProfile and AppArmorProfile have identical schemas.
        "SeccompProfile" | "AppArmorProfile" => {
            &[F(1, "type", One(Str)), F(2, "localhostProfile", Ptr(Str))]
        }
        "Sysctl" => &[F(1, "name", One(Str)), F(2, "value", One(Str))],
        "Container" => &[
            F(1, "name", One(Str)),
            F(2, "image", One(Str)),
            F(3, "command", Rep(Str)),
            F(4, "args", Rep(Str)),
            F(5, "workingDir", One(Str)),
            F(6, "ports", Rep(Msg("ContainerPort"))),
            F(19, "envFrom", Rep(Msg("EnvFromSource"))),
            F(7, "env", Rep(Msg("EnvVar"))),
            F(8, "resources", One(Msg("ResourceRequirements"))),
            F(23, "resizePolicy", Rep(Msg("ContainerResizePolicy"))),
            F(24, "restartPolicy", Ptr(Str)),
            F(9, "volumeMounts", Rep(Msg("VolumeMount"))),
            F(21, "volumeDevices", Rep(Msg("VolumeDevice"))),
            F(10, "livenessProbe", Ptr(Msg("Probe"))),
            F(11, "readinessProbe", Ptr(Msg("Probe"))),
            F(22, "startupProbe", Ptr(Msg("Probe"))),
            F(12, "lifecycle", Ptr(Msg("Lifecycle"))),
            F(13, "terminationMessagePath", One(Str)),
            F(20, "terminationMessagePolicy", One(Str)),
            F(14, "imagePullPolicy", One(Str)),
            F(15, "securityContext", Ptr(Msg("SecurityContext"))),
            F(16, "stdin", One(Bool)),
            F(17, "stdinOnce", One(Bool)),
            F(18, "tty", One(Bool)),
        ],
        "ContainerResizePolicy" => &[
            F(1, "resourceName", One(Str)),
            F(2, "restartPolicy", One(Str)),
        ],
        "ContainerPort" => &[
            F(1, "name", One(Str)),
            F(2, "hostPort", One(I32)),
            F(3, "containerPort", One(I32)),
            F(4, "protocol", One(Str)),
            F(5, "hostIP", One(Str)),
        ],
        "EnvFromSource" => &[
            F(1, "prefix", One(Str)),
            F(2, "configMapRef", Ptr(Msg("ConfigMapEnvSource"))),
            F(3, "secretRef", Ptr(Msg("SecretEnvSource"))),
        ],
        // ConfigMapEnvSource and SecretEnvSource have identical schemas.
        "ConfigMapEnvSource" | "SecretEnvSource" => &[
            F(1, "localObjectReference", Inline("LocalObjectReference")),
            F(2, "optional", Ptr(Bool)),
        ],
        "EnvVar" => &[
            F(1, "name", One(Str)),
            F(2, "value", One(Str)),
            F(3, "valueFrom", Ptr(Msg("EnvVarSource"))),
        ],
        "EnvVarSource" => &[
            F(1, "fieldRef", Ptr(Msg("ObjectFieldSelector"))),
            F(2, "resourceFieldRef", Ptr(Msg("ResourceFieldSelector"))),
            F(3, "configMapKeyRef", Ptr(Msg("ConfigMapKeySelector"))),
            F(4, "secretKeyRef", Ptr(Msg("SecretKeySelector"))),
        ],
        "ObjectFieldSelector" => &[F(1, "apiVersion", One(Str)), F(2, "fieldPath", One(Str))],
        "ResourceFieldSelector" => &[
            F(1, "containerName", One(Str)),
            F(2, "resource", One(Str)),
            F(3, "divisor", One(Quantity)),
        ],
        // ConfigMapKeySelector and SecretKeySelector have identical schemas.
        "ConfigMapKeySelector" | "SecretKeySelector" => &[
            F(1, "localObjectReference", Inline("LocalObjectReference")),
            F(2, "key", One(Str)),
            F(3, "optional", Ptr(Bool)),
        ],
        "ResourceRequirements" => &[
            F(1, "limits", MapOf(Str, Quantity)),
            F(2, "requests", MapOf(Str, Quantity)),
            F(3, "claims", Rep(Msg("ResourceClaim"))),
        ],
        "ResourceClaim" => &[F(1, "name", One(Str)), F(2, "request", One(Str))],
        "VolumeMount" => &[
            F(1, "name", One(Str)),
            F(2, "readOnly", One(Bool)),
            F(7, "recursiveReadOnly", Ptr(Str)),
            F(3, "mountPath", One(Str)),
            F(4, "subPath", One(Str)),
            F(5, "mountPropagation", Ptr(Str)),
            F(6, "subPathExpr", One(Str)),
        ],
        "VolumeDevice" => &[F(1, "name", One(Str)), F(2, "devicePath", One(Str))],
        "Probe" => &[
            F(1, "handler", Inline("ProbeHandler")),
            F(2, "initialDelaySeconds", One(I32)),
            F(3, "timeoutSeconds", One(I32)),
            F(4, "periodSeconds", One(I32)),
            F(5, "successThreshold", One(I32)),
            F(6, "failureThreshold", One(I32)),
            F(7, "terminationGracePeriodSeconds", Ptr(I64)),
        ],
        "ProbeHandler" => &[
            F(1, "exec", Ptr(Msg("ExecAction"))),
            F(2, "httpGet", Ptr(Msg("HTTPGetAction"))),
            F(3, "tcpSocket", Ptr(Msg("TCPSocketAction"))),
            F(4, "grpc", Ptr(Msg("GRPCAction"))),
        ],
        "LifecycleHandler" => &[
            F(1, "exec", Ptr(Msg("ExecAction"))),
            F(2, "httpGet", Ptr(Msg("HTTPGetAction"))),
            F(3, "tcpSocket", Ptr(Msg("TCPSocketAction"))),
            F(4, "sleep", Ptr(Msg("SleepAction"))),
        ],
        "Lifecycle" => &[
            F(1, "postStart", Ptr(Msg("LifecycleHandler"))),
            F(2, "preStop", Ptr(Msg("LifecycleHandler"))),
            F(3, "stopSignal", Ptr(Str)),
        ],
        "SleepAction" => &[F(1, "seconds", One(I64))],
        "ExecAction" => &[F(1, "command", Rep(Str))],
        "HTTPGetAction" => &[
            F(1, "path", One(Str)),
            F(2, "port", One(IntOrString)),
            F(3, "host", One(Str)),
            F(4, "scheme", One(Str)),
            F(5, "httpHeaders", Rep(Msg("HTTPHeader"))),
        ],
        "HTTPHeader" => &[F(1, "name", One(Str)), F(2, "value", One(Str))],
        "TCPSocketAction" => &[F(1, "port", One(IntOrString)), F(2, "host", One(Str))],
        "GRPCAction" => &[F(1, "port", One(I32)), F(2, "service", Ptr(Str))],
        "Volume" => &[
            F(1, "name", One(Str)),
            F(2, "volumeSource", Inline("VolumeSource")),
        ],
        "VolumeSource" => &[
            F(1, "hostPath", Ptr(Msg("HostPathVolumeSource"))),
            F(2, "emptyDir", Ptr(Msg("EmptyDirVolumeSource"))),
            F(6, "secret", Ptr(Msg("SecretVolumeSource"))),
            F(7, "nfs", Ptr(Msg("NFSVolumeSource"))),
            F(
                10,
                "persistentVolumeClaim",
                Ptr(Msg("PersistentVolumeClaimVolumeSource")),
            ),
            F(16, "downwardAPI", Ptr(Msg("DownwardAPIVolumeSource"))),
            F(19, "configMap", Ptr(Msg("ConfigMapVolumeSource"))),
            F(26, "projected", Ptr(Msg("ProjectedVolumeSource"))),
            F(28, "csi", Ptr(Msg("CSIVolumeSource"))),
        ],
        "HostPathVolumeSource" => &[F(1, "path", One(Str)), F(2, "type", Ptr(Str))],
        "EmptyDirVolumeSource" => &[F(1, "medium", One(Str)), F(2, "sizeLimit", Ptr(Quantity))],
        "SecretVolumeSource" => &[
            F(1, "secretName", One(Str)),
            F(2, "items", Rep(Msg("KeyToPath"))),
            F(3, "defaultMode", Ptr(I32)),
            F(4, "optional", Ptr(Bool)),
        ],
        "ConfigMapVolumeSource" => &[
            F(1, "localObjectReference", Inline("LocalObjectReference")),
            F(2, "items", Rep(Msg("KeyToPath"))),
            F(3, "defaultMode", Ptr(I32)),
            F(4, "optional", Ptr(Bool)),
        ],
        "KeyToPath" => &[
            F(1, "key", One(Str)),
            F(2, "path", One(Str)),
            F(3, "mode", Ptr(I32)),
        ],
        "NFSVolumeSource" => &[
            F(1, "server", One(Str)),
            F(2, "path", One(Str)),
            F(3, "readOnly", One(Bool)),
        ],
        "PersistentVolumeClaimVolumeSource" => {
            &[F(1, "claimName", One(Str)), F(2, "readOnly", One(Bool))]
        }
        "CSIVolumeSource" => &[
            F(1, "driver", One(Str)),
            F(2, "readOnly", Ptr(Bool)),
            F(3, "fsType", Ptr(Str)),
            F(4, "volumeAttributes", MapOf(Str, Str)),
            F(5, "nodePublishSecretRef", Ptr(Msg("LocalObjectReference"))),
        ],
        "DownwardAPIVolumeSource" => &[
            F(1, "items", Rep(Msg("DownwardAPIVolumeFile"))),
            F(2, "defaultMode", Ptr(I32)),
        ],
        "DownwardAPIVolumeFile" => &[
            F(1, "path", One(Str)),
            F(2, "fieldRef", Ptr(Msg("ObjectFieldSelector"))),
            F(3, "resourceFieldRef", Ptr(Msg("ResourceFieldSelector"))),
            F(4, "mode", Ptr(I32)),
        ],
        "ProjectedVolumeSource" => &[
            F(1, "sources", Rep(Msg("VolumeProjection"))),
            F(2, "defaultMode", Ptr(I32)),
        ],
        "VolumeProjection" => &[
            F(1, "secret", Ptr(Msg("SecretProjection"))),
            F(2, "downwardAPI", Ptr(Msg("DownwardAPIProjection"))),
            F(3, "configMap", Ptr(Msg("ConfigMapProjection"))),
            F(
                4,
                "serviceAccountToken",
                Ptr(Msg("ServiceAccountTokenProjection")),
            ),
        ],
        // SecretProjection and ConfigMapProjection have identical schemas.
        "SecretProjection" | "ConfigMapProjection" => &[
            F(1, "localObjectReference", Inline("LocalObjectReference")),
            F(2, "items", Rep(Msg("KeyToPath"))),
            F(4, "optional", Ptr(Bool)),
        ],
        "DownwardAPIProjection" => &[F(1, "items", Rep(Msg("DownwardAPIVolumeFile")))],
        "ServiceAccountTokenProjection" => &[
            F(1, "audience", One(Str)),
            F(2, "expirationSeconds", Ptr(I64)),
            F(3, "path", One(Str)),
        ],
        "PersistentVolumeClaim" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("PersistentVolumeClaimSpec"))),
        ],
        "PersistentVolumeClaimSpec" => &[
            F(1, "accessModes", Rep(Str)),
            F(4, "selector", Ptr(Msg("LabelSelector"))),
            F(2, "resources", One(Msg("ResourceRequirements"))),
            F(3, "volumeName", One(Str)),
            F(5, "storageClassName", Ptr(Str)),
            F(6, "volumeMode", Ptr(Str)),
            F(7, "dataSource", Ptr(Msg("TypedLocalObjectReference"))),
        ],

        // ---- k8s.io/api/batch/v1 ----
        "Job" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("JobSpec"))),
        ],
        "JobSpec" => &[
            F(1, "parallelism", Ptr(I32)),
            F(2, "completions", Ptr(I32)),
            F(3, "activeDeadlineSeconds", Ptr(I64)),
            F(7, "backoffLimit", Ptr(I32)),
            F(12, "backoffLimitPerIndex", Ptr(I32)),
            F(13, "maxFailedIndexes", Ptr(I32)),
            F(4, "selector", Ptr(Msg("LabelSelector"))),
            F(5, "manualSelector", Ptr(Bool)),
            F(6, "template", One(Msg("PodTemplateSpec"))),
            F(8, "ttlSecondsAfterFinished", Ptr(I32)),
            F(9, "completionMode", Ptr(Str)),
            F(10, "suspend", Ptr(Bool)),
            F(14, "podReplacementPolicy", Ptr(Str)),
            F(16, "managedBy", Ptr(Str)),
        ],
        "CronJob" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("CronJobSpec"))),
        ],
        "CronJobSpec" => &[
            F(1, "schedule", One(Str)),
            F(8, "timeZone", Ptr(Str)),
            F(2, "startingDeadlineSeconds", Ptr(I64)),
            F(3, "concurrencyPolicy", One(Str)),
            F(4, "suspend", Ptr(Bool)),
            F(5, "jobTemplate", One(Msg("JobTemplateSpec"))),
            F(6, "successfulJobsHistoryLimit", Ptr(I32)),
            F(7, "failedJobsHistoryLimit", Ptr(I32)),
        ],
        "JobTemplateSpec" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("JobSpec"))),
        ],

        // ---- k8s.io/api/apps/v1 ----
        "Deployment" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("DeploymentSpec"))),
        ],
        "DeploymentSpec" => &[
            F(1, "replicas", Ptr(I32)),
            F(2, "selector", Ptr(Msg("LabelSelector"))),
            F(3, "template", One(Msg("PodTemplateSpec"))),
            F(4, "strategy", One(Msg("DeploymentStrategy"))),
            F(5, "minReadySeconds", One(I32)),
            F(6, "revisionHistoryLimit", Ptr(I32)),
            F(7, "paused", One(Bool)),
            F(9, "progressDeadlineSeconds", Ptr(I32)),
        ],
        "DeploymentStrategy" => &[
            F(1, "type", One(Str)),
            F(2, "rollingUpdate", Ptr(Msg("RollingUpdate"))),
        ],
        // RollingUpdateDeployment and RollingUpdateDaemonSet have identical schemas.
        "RollingUpdate" => &[
            F(1, "maxUnavailable", Ptr(IntOrString)),
            F(2, "maxSurge", Ptr(IntOrString)),
        ],
        "DaemonSet" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("DaemonSetSpec"))),
        ],
        "DaemonSetSpec" => &[
            F(1, "selector", Ptr(Msg("LabelSelector"))),
            F(2, "template", One(Msg("PodTemplateSpec"))),
            F(3, "updateStrategy", One(Msg("DeploymentStrategy"))),
            F(4, "minReadySeconds", One(I32)),
            F(6, "revisionHistoryLimit", Ptr(I32)),
        ],
        "ReplicaSet" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("ReplicaSetSpec"))),
        ],
        "ReplicaSetSpec" => &[
            F(1, "replicas", Ptr(I32)),
            F(4, "minReadySeconds", One(I32)),
            F(2, "selector", Ptr(Msg("LabelSelector"))),
            F(3, "template", One(Msg("PodTemplateSpec"))),
        ],
        "StatefulSet" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("StatefulSetSpec"))),
        ],
        "StatefulSetSpec" => &[
            F(1, "replicas", Ptr(I32)),
            F(2, "selector", Ptr(Msg("LabelSelector"))),
            F(3, "template", One(Msg("PodTemplateSpec"))),
            F(4, "volumeClaimTemplates", Rep(Msg("PersistentVolumeClaim"))),
            F(5, "serviceName", One(Str)),
            F(6, "podManagementPolicy", One(Str)),
            F(7, "updateStrategy", One(Msg("StatefulSetUpdateStrategy"))),
            F(8, "revisionHistoryLimit", Ptr(I32)),
            F(9, "minReadySeconds", One(I32)),
            F(
                10,
                "persistentVolumeClaimRetentionPolicy",
                Ptr(Msg("StatefulSetPersistentVolumeClaimRetentionPolicy")),
            ),
            F(11, "ordinals", Ptr(Msg("StatefulSetOrdinals"))),
        ],
        "StatefulSetUpdateStrategy" => &[
            F(1, "type", One(Str)),
            F(
                2,
                "rollingUpdate",
                Ptr(Msg("RollingUpdateStatefulSetStrategy")),
            ),
        ],
        "RollingUpdateStatefulSetStrategy" => &[
            F(1, "partition", Ptr(I32)),
            F(2, "maxUnavailable", Ptr(IntOrString)),
        ],
        "StatefulSetPersistentVolumeClaimRetentionPolicy" => {
            &[F(1, "whenDeleted", One(Str)), F(2, "whenScaled", One(Str))]
        }
        "StatefulSetOrdinals" => &[F(1, "start", One(I32))],

        // ---- k8s.io/api/rbac/v1 ----
        "Role" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "rules", Rep(Msg("PolicyRule"))),
        ],
        "ClusterRole" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "rules", Rep(Msg("PolicyRule"))),
            F(3, "aggregationRule", Ptr(Msg("AggregationRule"))),
        ],
        "PolicyRule" => &[
            F(1, "verbs", Rep(Str)),
            F(2, "apiGroups", Rep(Str)),
            F(3, "resources", Rep(Str)),
            F(4, "resourceNames", Rep(Str)),
            F(5, "nonResourceURLs", Rep(Str)),
        ],
        "AggregationRule" => &[F(1, "clusterRoleSelectors", Rep(Msg("LabelSelector")))],
        // RoleBinding and ClusterRoleBinding have identical schemas.
        "RoleBinding" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "subjects", Rep(Msg("Subject"))),
            F(3, "roleRef", One(Msg("RoleRef"))),
        ],
        "Subject" => &[
            F(1, "kind", One(Str)),
            F(2, "apiGroup", One(Str)),
            F(3, "name", One(Str)),
            F(4, "namespace", One(Str)),
        ],
        "RoleRef" => &[
            F(1, "apiGroup", One(Str)),
            F(2, "kind", One(Str)),
            F(3, "name", One(Str)),
        ],

        // ---- k8s.io/api/authorization/v1 ----
        "SelfSubjectAccessReview" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("SelfSubjectAccessReviewSpec"))),
        ],
        "SelfSubjectAccessReviewSpec" => &[
            F(1, "resourceAttributes", Ptr(Msg("ResourceAttributes"))),
            F(
                2,
                "nonResourceAttributes",
                Ptr(Msg("NonResourceAttributes")),
            ),
        ],
        "ResourceAttributes" => &[
            F(1, "namespace", One(Str)),
            F(2, "verb", One(Str)),
            F(3, "group", One(Str)),
            F(4, "version", One(Str)),
            F(5, "resource", One(Str)),
            F(6, "subresource", One(Str)),
            F(7, "name", One(Str)),
            F(8, "fieldSelector", Ptr(Msg("FieldSelectorAttributes"))),
            F(9, "labelSelector", Ptr(Msg("LabelSelectorAttributes"))),
        ],
        "FieldSelectorAttributes" => &[
            F(1, "rawSelector", One(Str)),
            F(2, "requirements", Rep(Msg("LabelSelectorRequirement"))),
        ],
        "LabelSelectorAttributes" => &[
            F(1, "rawSelector", One(Str)),
            F(2, "requirements", Rep(Msg("LabelSelectorRequirement"))),
        ],
        "NonResourceAttributes" => &[F(1, "path", One(Str)), F(2, "verb", One(Str))],
        "SelfSubjectRulesReview" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("SelfSubjectRulesReviewSpec"))),
        ],
        "SelfSubjectRulesReviewSpec" => &[F(1, "namespace", One(Str))],
        "SubjectAccessReview" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("SubjectAccessReviewSpec"))),
        ],
        "SubjectAccessReviewSpec" => &[
            F(1, "resourceAttributes", Ptr(Msg("ResourceAttributes"))),
            F(
                2,
                "nonResourceAttributes",
                Ptr(Msg("NonResourceAttributes")),
            ),
            F(3, "user", One(Str)),
            F(4, "groups", Rep(Str)),
            F(5, "extra", MapOf(Str, ExtraValue)),
            F(6, "uid", One(Str)),
        ],

        // ---- k8s.io/api/authentication/v1 ----
        "TokenRequest" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("TokenRequestSpec"))),
        ],
        "TokenRequestSpec" => &[
            F(1, "audiences", Rep(Str)),
            F(4, "expirationSeconds", Ptr(I64)),
            F(3, "boundObjectRef", Ptr(Msg("BoundObjectReference"))),
        ],
        "BoundObjectReference" => &[
            F(1, "kind", One(Str)),
            F(2, "apiVersion", One(Str)),
            F(3, "name", One(Str)),
            F(4, "uid", One(Str)),
        ],
        "TokenReview" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("TokenReviewSpec"))),
        ],
        "TokenReviewSpec" => &[F(1, "token", One(Str)), F(2, "audiences", Rep(Str))],

        // ---- k8s.io/api/policy/v1 ----
        "Eviction" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "deleteOptions", Ptr(Msg("DeleteOptions"))),
        ],
        "PodDisruptionBudget" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("PodDisruptionBudgetSpec"))),
        ],
        "PodDisruptionBudgetSpec" => &[
            F(1, "minAvailable", Ptr(IntOrString)),
            F(2, "selector", Ptr(Msg("LabelSelector"))),
            F(3, "maxUnavailable", Ptr(IntOrString)),
            F(4, "unhealthyPodEvictionPolicy", Ptr(Str)),
        ],

        // ---- k8s.io/api/autoscaling/v1 ----
        "Scale" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("ScaleSpec"))),
            F(3, "status", One(Msg("ScaleStatus"))),
        ],
        "ScaleSpec" => &[F(1, "replicas", One(I32))],
        "ScaleStatus" => &[F(1, "replicas", One(I32)), F(2, "selector", One(Str))],

        // ---- k8s.io/api/coordination/v1 ----
        "Lease" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "spec", One(Msg("LeaseSpec"))),
        ],
        "LeaseSpec" => &[
            F(1, "holderIdentity", Ptr(Str)),
            F(2, "leaseDurationSeconds", Ptr(I32)),
            F(3, "acquireTime", Ptr(MicroTime)),
            F(4, "renewTime", Ptr(MicroTime)),
            F(5, "leaseTransitions", Ptr(I32)),
            F(6, "strategy", Ptr(Str)),
            F(7, "preferredHolder", Ptr(Str)),
        ],

        // ---- k8s.io/api/scheduling/v1 ----
        "PriorityClass" => &[
            F(1, "metadata", One(Msg("ObjectMeta"))),
            F(2, "value", One(I32)),
            F(3, "globalDefault", One(Bool)),
            F(4, "description", One(Str)),
            F(5, "preemptionPolicy", Ptr(Str)),
        ],
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Nesting limit (messages within messages) guarding against stack exhaustion.
const MAX_DEPTH: usize = 64;

fn decode_message(name: &str, buf: &[u8], depth: usize) -> Result<Map<String, Value>, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::new("messages nested too deeply"));
    }
    let fields = schema(name)
        .ok_or_else(|| DecodeError::new(format!("no schema for message {name} (yurtsim bug)")))?;
    let mut out = Map::new();
    let mut r = Reader::new(buf);
    while let Some((num, wire_type)) = r.key()? {
        let field = fields.iter().find(|f| f.0 == num);
        let wire = r.value(num, wire_type).map_err(|e| match field {
            Some(f) => e.at(f.1),
            None => e,
        })?;
        let Some(field) = field else {
            continue; // unknown field: skipped
        };
        apply_field(field, wire, &mut out, depth).map_err(|e| e.at(field.1))?;
    }
    Ok(out)
}

fn apply_field(
    field: &F,
    wire: Wire<'_>,
    out: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), DecodeError> {
    let name = field.1;
    match field.2 {
        One(ty) => {
            let v = decode_value(ty, wire, depth)?;
            if is_scalar(ty) && is_zero(&v) {
                out.remove(name);
            } else {
                insert_merging(out, name, v);
            }
        }
        Ptr(ty) => insert_merging(out, name, decode_value(ty, wire, depth)?),
        Rep(ty) => {
            let entry = out
                .entry(name.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(items) = entry else {
                unreachable!("repeated fields are only ever arrays")
            };
            match (ty, wire) {
                (Bool | I32 | I64, Wire::Len(packed)) => {
                    let mut r = Reader::new(packed);
                    while r.pos < packed.len() {
                        let v = r.varint().map_err(|e| e.at(format!("[{}]", items.len())))?;
                        items.push(varint_value(ty, v));
                    }
                }
                _ => {
                    let idx = items.len();
                    let v = decode_value(ty, wire, depth).map_err(|e| e.at(format!("[{idx}]")))?;
                    items.push(v);
                }
            }
        }
        MapOf(key_ty, value_ty) => {
            let Wire::Len(entry) = wire else {
                return Err(wrong_wire("map entry", wire));
            };
            let mut key: Option<String> = None;
            let mut value: Option<Value> = None;
            let mut r = Reader::new(entry);
            while let Some((n, w)) = r.field()? {
                match n {
                    1 => {
                        key = Some(match decode_value(key_ty, w, depth)? {
                            Value::String(s) => s,
                            other => other.to_string(),
                        })
                    }
                    2 => value = Some(decode_value(value_ty, w, depth)?),
                    _ => {}
                }
            }
            let key = key.unwrap_or_default();
            let value = match value {
                Some(v) => v,
                None => decode_value(value_ty, zero_wire(value_ty), depth)
                    .map_err(|e| e.at(format!("[{key:?}]")))?,
            };
            let entry = out
                .entry(name.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = entry {
                map.insert(key, value);
            }
        }
        Inline(msg) => {
            let Wire::Len(b) = wire else {
                return Err(wrong_wire("embedded message", wire));
            };
            for (k, v) in decode_message(msg, b, depth + 1)? {
                out.insert(k, v);
            }
        }
    }
    Ok(())
}

/// Inserts, merging objects when a message field occurs more than once (protobuf merge semantics).
fn insert_merging(out: &mut Map<String, Value>, name: &str, v: Value) {
    match (out.get_mut(name), v) {
        (Some(Value::Object(existing)), Value::Object(new)) => {
            for (k, v) in new {
                existing.insert(k, v);
            }
        }
        (_, v) => {
            out.insert(name.to_string(), v);
        }
    }
}

fn is_scalar(ty: Ty) -> bool {
    matches!(ty, Str | Bytes | Bool | I32 | I64)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Null => true,
        _ => false,
    }
}

/// The wire value of a field's default (used for map entries without a value).
fn zero_wire(ty: Ty) -> Wire<'static> {
    match ty {
        Bool | I32 | I64 => Wire::Varint(0),
        _ => Wire::Len(&[]),
    }
}

fn wrong_wire(expected: &str, got: Wire<'_>) -> DecodeError {
    DecodeError::new(format!(
        "expected {expected}, got {} wire type",
        got.describe()
    ))
}

fn varint_value(ty: Ty, v: u64) -> Value {
    match ty {
        Bool => Value::Bool(v != 0),
        // int32 negative values are sign-extended to 64 bits on the wire.
        I32 => Value::from(v as i64 as i32),
        _ => Value::from(v as i64),
    }
}

fn decode_value(ty: Ty, wire: Wire<'_>, depth: usize) -> Result<Value, DecodeError> {
    match (ty, wire) {
        (Bool | I32 | I64, Wire::Varint(v)) => Ok(varint_value(ty, v)),
        (Str, Wire::Len(b)) => Ok(Value::String(utf8(b)?)),
        (Bytes, Wire::Len(b)) => Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(b),
        )),
        (Msg(name), Wire::Len(b)) => Ok(Value::Object(decode_message(name, b, depth + 1)?)),
        (Time | MicroTime, Wire::Len(b)) => {
            if b.is_empty() {
                return Ok(Value::Null); // the zero time, `null` in Go's JSON
            }
            let (mut seconds, mut nanos) = (0i64, 0i64);
            let mut r = Reader::new(b);
            while let Some((n, w)) = r.field()? {
                match (n, w) {
                    (1, Wire::Varint(v)) => seconds = v as i64,
                    (2, Wire::Varint(v)) => nanos = i64::from(v as i64 as i32),
                    (1 | 2, w) => return Err(wrong_wire("varint", w)),
                    _ => {}
                }
            }
            let micros = (ty == MicroTime).then_some(nanos / 1000);
            format_rfc3339(seconds, micros).map(Value::String)
        }
        (Quantity, Wire::Len(b)) => {
            let s = single_string_field(b)?;
            Ok(Value::String(if s.is_empty() { "0".into() } else { s }))
        }
        (IntOrString, Wire::Len(b)) => {
            let (mut kind, mut int_val, mut str_val) = (0u64, 0i32, String::new());
            let mut r = Reader::new(b);
            while let Some((n, w)) = r.field()? {
                match (n, w) {
                    (1, Wire::Varint(v)) => kind = v,
                    (2, Wire::Varint(v)) => int_val = v as i64 as i32,
                    (3, Wire::Len(s)) => str_val = utf8(s)?,
                    (1..=3, w) => return Err(wrong_wire("IntOrString field", w)),
                    _ => {}
                }
            }
            Ok(if kind == 1 {
                Value::String(str_val)
            } else {
                Value::from(int_val)
            })
        }
        (RawExtension | FieldsV1, Wire::Len(b)) => {
            let mut raw: &[u8] = &[];
            let mut r = Reader::new(b);
            while let Some((n, w)) = r.field()? {
                match (n, w) {
                    (1, Wire::Len(x)) => raw = x,
                    (1, w) => return Err(wrong_wire("bytes", w)),
                    _ => {}
                }
            }
            if raw.is_empty() {
                return Ok(if ty == FieldsV1 {
                    Value::Object(Map::new())
                } else {
                    Value::Null
                });
            }
            if raw.starts_with(MAGIC) {
                return decode_at_depth(raw, depth + 1)
                    .map_err(|e| DecodeError::new(format!("embedded object: {e}")));
            }
            serde_json::from_slice(raw)
                .map_err(|e| DecodeError::new(format!("embedded raw bytes are not JSON: {e}")))
        }
        (Duration, Wire::Len(b)) => {
            let mut ns = 0i64;
            let mut r = Reader::new(b);
            while let Some((n, w)) = r.field()? {
                match (n, w) {
                    (1, Wire::Varint(v)) => ns = v as i64,
                    (1, w) => return Err(wrong_wire("varint", w)),
                    _ => {}
                }
            }
            Ok(Value::String(crate::util::go_duration_ns(ns)))
        }
        (ExtraValue, Wire::Len(b)) => {
            let mut items = Vec::new();
            let mut r = Reader::new(b);
            while let Some((n, w)) = r.field()? {
                match (n, w) {
                    (1, Wire::Len(s)) => items.push(Value::String(utf8(s)?)),
                    (1, w) => return Err(wrong_wire("string", w)),
                    _ => {}
                }
            }
            Ok(Value::Array(items))
        }
        (Bool | I32 | I64, w) => Err(wrong_wire("varint", w)),
        (_, w) => Err(wrong_wire("length-delimited", w)),
    }
}

/// Field 1 (string) of a message, e.g. resource.Quantity.
fn single_string_field(b: &[u8]) -> Result<String, DecodeError> {
    let mut out = String::new();
    let mut r = Reader::new(b);
    while let Some((n, w)) = r.field()? {
        match (n, w) {
            (1, Wire::Len(s)) => out = utf8(s)?,
            (1, w) => return Err(wrong_wire("string", w)),
            _ => {}
        }
    }
    Ok(out)
}

/// Formats Unix seconds as RFC 3339 UTC ("2026-11-22T01:02:03Z"), with 6 fractional digits when
/// `micros` is given (metav1.MicroTime).
fn format_rfc3339(seconds: i64, micros: Option<i64>) -> Result<String, DecodeError> {
    // Go's RFC 3339 range: years 0000..=9999.
    const MIN: i64 = -62_167_219_200; // 0000-01-01T00:00:00Z
    const MAX: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    if !(MIN..=MAX).contains(&seconds) {
        return Err(DecodeError::new(format!(
            "timestamp {seconds} out of range"
        )));
    }
    Ok(crate::util::format_unix(
        seconds,
        micros.map(|us| us.clamp(0, 999_999) as u32),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tiny protobuf encoder for building fixtures.
    #[derive(Default, Clone)]
    struct Enc(Vec<u8>);

    impl Enc {
        fn new() -> Self {
            Enc(Vec::new())
        }
        fn raw_varint(&mut self, mut v: u64) {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(b);
                    return;
                }
                self.0.push(b | 0x80);
            }
        }
        fn key(&mut self, num: u32, wt: u8) {
            self.raw_varint((u64::from(num) << 3) | u64::from(wt));
        }
        fn varint(mut self, num: u32, v: u64) -> Self {
            self.key(num, 0);
            self.raw_varint(v);
            self
        }
        fn int(self, num: u32, v: i64) -> Self {
            self.varint(num, v as u64)
        }
        fn bytes(mut self, num: u32, b: &[u8]) -> Self {
            self.key(num, 2);
            self.raw_varint(b.len() as u64);
            self.0.extend_from_slice(b);
            self
        }
        fn string(self, num: u32, s: &str) -> Self {
            self.bytes(num, s.as_bytes())
        }
        fn msg(self, num: u32, m: Enc) -> Self {
            self.bytes(num, &m.0)
        }
        fn fixed32(mut self, num: u32, v: u32) -> Self {
            self.key(num, 5);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn fixed64(mut self, num: u32, v: u64) -> Self {
            self.key(num, 1);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn packed(self, num: u32, vals: &[i64]) -> Self {
            let mut inner = Enc::new();
            for &v in vals {
                inner.raw_varint(v as u64);
            }
            self.bytes(num, &inner.0)
        }
        fn map_entry(self, num: u32, k: &str, v: &str) -> Self {
            self.msg(num, Enc::new().string(1, k).string(2, v))
        }
    }

    fn envelope(api_version: &str, kind: &str, raw: Enc) -> Vec<u8> {
        let unknown = Enc::new()
            .msg(1, Enc::new().string(1, api_version).string(2, kind))
            .msg(2, raw)
            .string(3, "")
            .string(4, "");
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&unknown.0);
        out
    }

    fn meta(name: &str) -> Enc {
        Enc::new()
            .string(1, name)
            .string(2, "")
            .string(3, "")
            .msg(8, Enc::new())
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn table_driven_hand_encoded_fixtures() {
        let cases: Vec<(&str, Vec<u8>, Value)> = vec![
            (
                "SelfSubjectAccessReview",
                envelope(
                    "authorization.k8s.io/v1",
                    "SelfSubjectAccessReview",
                    Enc::new().msg(1, meta("")).msg(
                        2,
                        Enc::new().msg(
                            1,
                            Enc::new()
                                .string(1, "default")
                                .string(2, "get")
                                .string(3, "")
                                .string(4, "")
                                .string(5, "pods")
                                .string(6, "")
                                .string(7, ""),
                        ),
                    ),
                ),
                json!({
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "metadata": {"creationTimestamp": null},
                    "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}
                }),
            ),
            (
                "Job",
                envelope(
                    "batch/v1",
                    "Job",
                    Enc::new().msg(1, meta("x").string(3, "default")).msg(
                        2,
                        Enc::new().int(7, 0).msg(
                            6,
                            Enc::new().msg(1, meta("")).msg(
                                2,
                                Enc::new()
                                    .msg(
                                        2,
                                        Enc::new()
                                            .string(1, "x")
                                            .string(2, "busybox")
                                            .string(3, "echo")
                                            .string(3, "hi")
                                            .msg(8, Enc::new())
                                            .varint(16, 0),
                                    )
                                    .string(3, "Never")
                                    .int(4, 30),
                            ),
                        ),
                    ),
                ),
                json!({
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": "x", "namespace": "default", "creationTimestamp": null},
                    "spec": {
                        "backoffLimit": 0,
                        "template": {
                            "metadata": {"creationTimestamp": null},
                            "spec": {
                                "containers": [{"name": "x", "image": "busybox", "command": ["echo", "hi"], "resources": {}}],
                                "restartPolicy": "Never",
                                "terminationGracePeriodSeconds": 30
                            }
                        }
                    }
                }),
            ),
            (
                "ConfigMap",
                envelope(
                    "v1",
                    "ConfigMap",
                    Enc::new()
                        .msg(1, meta("cm").map_entry(11, "app", "web"))
                        .map_entry(2, "a", "b")
                        .map_entry(2, "c", "")
                        .msg(3, Enc::new().string(1, "bin").bytes(2, &[0, 1, 2])),
                ),
                json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "cm", "labels": {"app": "web"}, "creationTimestamp": null},
                    "data": {"a": "b", "c": ""},
                    "binaryData": {"bin": "AAEC"}
                }),
            ),
            (
                "DeleteOptions",
                envelope(
                    "meta.k8s.io/v1",
                    "DeleteOptions",
                    Enc::new()
                        .int(1, 0)
                        .msg(2, Enc::new().string(1, "uid-1"))
                        .string(4, "Foreground")
                        .string(5, "All"),
                ),
                json!({
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": "uid-1"},
                    "propagationPolicy": "Foreground",
                    "dryRun": ["All"]
                }),
            ),
            (
                "Eviction with DeleteOptions",
                envelope(
                    "policy/v1",
                    "Eviction",
                    Enc::new()
                        .msg(1, meta("p1").string(3, "default"))
                        .msg(2, Enc::new().int(1, 5)),
                ),
                json!({
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": "p1", "namespace": "default", "creationTimestamp": null},
                    "deleteOptions": {"gracePeriodSeconds": 5}
                }),
            ),
            (
                "Scale",
                envelope(
                    "autoscaling/v1",
                    "Scale",
                    Enc::new()
                        .msg(1, meta("d1"))
                        .msg(2, Enc::new().int(1, 3))
                        .msg(3, Enc::new().int(1, 1).string(2, "app=d1")),
                ),
                json!({
                    "apiVersion": "autoscaling/v1",
                    "kind": "Scale",
                    "metadata": {"name": "d1", "creationTimestamp": null},
                    "spec": {"replicas": 3},
                    "status": {"replicas": 1, "selector": "app=d1"}
                }),
            ),
            (
                "Lease with MicroTime",
                envelope(
                    "coordination.k8s.io/v1",
                    "Lease",
                    Enc::new().msg(1, meta("node-1")).msg(
                        2,
                        Enc::new()
                            .string(1, "node-1")
                            .int(2, 40)
                            .msg(4, Enc::new().int(1, 1_795_309_323).int(2, 123_456_789)),
                    ),
                ),
                json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": "node-1", "creationTimestamp": null},
                    "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40, "renewTime": "2026-11-22T01:02:03.123456Z"}
                }),
            ),
        ];
        for (name, body, want) in cases {
            let got = decode(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn pod_spec_details() {
        let container = Enc::new()
            .string(1, "c")
            .string(2, "img")
            .msg(6, Enc::new().int(3, 80).string(4, "TCP"))
            .msg(
                7,
                Enc::new().string(1, "NODE").msg(
                    3,
                    Enc::new().msg(1, Enc::new().string(1, "v1").string(2, "spec.nodeName")),
                ),
            )
            .msg(
                7,
                Enc::new().string(1, "K").msg(
                    3,
                    Enc::new().msg(
                        4,
                        Enc::new()
                            .msg(1, Enc::new().string(1, "sec"))
                            .string(2, "key"),
                    ),
                ),
            )
            .msg(
                8,
                Enc::new().msg(
                    1,
                    Enc::new()
                        .string(1, "cpu")
                        .msg(2, Enc::new().string(1, "100m")),
                ),
            )
            .msg(
                9,
                Enc::new().string(1, "data").string(3, "/data").varint(2, 1),
            )
            .msg(
                10,
                Enc::new()
                    .msg(
                        1,
                        Enc::new().msg(
                            2,
                            Enc::new()
                                .string(1, "/healthz")
                                .msg(2, Enc::new().int(1, 1).string(3, "http")),
                        ),
                    )
                    .int(4, 5),
            )
            .msg(
                15,
                Enc::new()
                    .varint(2, 1)
                    .int(4, 0)
                    .msg(1, Enc::new().string(1, "NET_ADMIN")),
            );
        let spec = Enc::new()
            .msg(
                1,
                Enc::new().string(1, "data").msg(
                    2,
                    Enc::new().msg(1, Enc::new().string(1, "/var/data").string(2, "Directory")),
                ),
            )
            .msg(
                1,
                Enc::new().string(1, "cfg").msg(
                    2,
                    Enc::new().msg(19, Enc::new().msg(1, Enc::new().string(1, "my-cm"))),
                ),
            )
            .msg(2, container)
            .msg(14, Enc::new().packed(4, &[1000, 2000]).int(2, -1))
            .msg(
                18,
                Enc::new().msg(
                    1,
                    Enc::new().msg(
                        1,
                        Enc::new().msg(
                            1,
                            Enc::new().msg(
                                1,
                                Enc::new()
                                    .string(1, "kubernetes.io/os")
                                    .string(2, "In")
                                    .string(3, "linux"),
                            ),
                        ),
                    ),
                ),
            )
            .msg(
                22,
                Enc::new()
                    .string(2, "Exists")
                    .string(4, "NoExecute")
                    .int(5, 300),
            )
            .varint(11, 1)
            .map_entry(7, "role", "edge");
        let body = envelope("v1", "Pod", Enc::new().msg(1, meta("p")).msg(2, spec));
        let got = decode(&body).unwrap();
        assert_eq!(
            got["spec"],
            json!({
                "volumes": [
                    {"name": "data", "hostPath": {"path": "/var/data", "type": "Directory"}},
                    {"name": "cfg", "configMap": {"name": "my-cm"}}
                ],
                "containers": [{
                    "name": "c",
                    "image": "img",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [
                        {"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                        {"name": "K", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "key"}}}
                    ],
                    "resources": {"limits": {"cpu": "100m"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                    "securityContext": {"privileged": true, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}
                }],
                "securityContext": {"supplementalGroups": [1000, 2000], "runAsUser": -1},
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]
                }}},
                "tolerations": [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "hostNetwork": true,
                "nodeSelector": {"role": "edge"}
            })
        );
    }

    #[test]
    fn packed_and_unpacked_repeated_ints() {
        let packed = Enc::new().packed(4, &[1, 2, 300, -5]);
        let unpacked = Enc::new().int(4, 1).int(4, 2).int(4, 300).int(4, -5);
        let mixed = Enc::new().packed(4, &[1, 2]).int(4, 300).packed(4, &[-5]);
        for psc in [packed, unpacked, mixed] {
            let spec = Enc::new().msg(14, psc);
            let body = envelope("v1", "Pod", Enc::new().msg(2, spec));
            let got = decode(&body).unwrap();
            assert_eq!(
                got["spec"]["securityContext"]["supplementalGroups"],
                json!([1, 2, 300, -5])
            );
        }
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let body = envelope(
            "v1",
            "ConfigMap",
            Enc::new()
                .varint(99, 7)
                .fixed32(100, 0xdead_beef)
                .fixed64(101, 42)
                .msg(
                    1,
                    meta("cm")
                        .string(999, "from the future")
                        .msg(500, Enc::new().int(1, 3)),
                )
                .string(102, "unknown")
                .map_entry(2, "a", "b"),
        );
        let got = decode(&body).unwrap();
        assert_eq!(
            got,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "creationTimestamp": null},
                "data": {"a": "b"}
            })
        );
    }

    #[test]
    fn truncated_input_is_an_error() {
        // Cuts inside the object's bytes (the envelope's last field) are always detectable;
        // cuts at field boundaries of the envelope itself would leave a valid shorter message.
        let mut body = MAGIC.to_vec();
        body.extend(
            Enc::new()
                .msg(1, Enc::new().string(1, "v1").string(2, "ConfigMap"))
                .0,
        );
        let raw_start = body.len();
        body.extend(
            Enc::new()
                .msg(2, Enc::new().msg(1, meta("cm")).map_entry(2, "a", "b"))
                .0,
        );
        assert!(decode(&body).is_ok());
        for cut in (raw_start + 1..body.len()).chain(1..4) {
            let err = decode(&body[..cut]).expect_err("truncated body must not decode");
            assert!(
                err.to_string()
                    .starts_with("yurtsim cannot decode protobuf"),
                "{err}"
            );
        }
        // A truncated object inside a well-formed envelope names the failing field.
        let inner = Enc::new().msg(1, meta("cm")).map_entry(2, "key", "value");
        let cut = Enc(inner.0[..inner.0.len() - 2].to_vec());
        let mut body = MAGIC.to_vec();
        body.extend(
            Enc::new()
                .msg(1, Enc::new().string(1, "v1").string(2, "ConfigMap"))
                .msg(2, cut)
                .0,
        );
        let err = decode(&body).unwrap_err();
        assert_eq!(err.http_status(), 400);
        assert!(
            matches!(&err, ProtobufError::Malformed { field, .. } if field == "data"),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("for v1 ConfigMap: field data"),
            "{err}"
        );
    }

    #[test]
    fn unsupported_kind_and_bad_envelope() {
        let err = decode(&envelope("networking.k8s.io/v1", "Ingress", meta("i"))).unwrap_err();
        assert_eq!(err.http_status(), 415);
        assert!(
            err.to_string()
                .starts_with("yurtsim cannot decode protobuf for networking.k8s.io/v1 Ingress: "),
            "{err}"
        );
        let err = decode(b"{\"kind\":\"Pod\"}").unwrap_err();
        assert!(matches!(err, ProtobufError::Envelope(_)));
        // Wrong wire type for a known field names the field.
        let body = envelope(
            "v1",
            "Namespace",
            Enc::new().msg(1, Enc::new().varint(1, 5)),
        );
        let err = decode(&body).unwrap_err();
        assert!(err.to_string().contains("field metadata.name"), "{err}");
        let mut gz = MAGIC.to_vec();
        gz.extend(
            Enc::new()
                .msg(1, Enc::new().string(1, "v1").string(2, "Pod"))
                .msg(2, Enc::new())
                .string(3, "gzip")
                .0,
        );
        assert_eq!(decode(&gz).unwrap_err().http_status(), 415);
    }

    #[test]
    fn special_types() {
        assert_eq!(format_rfc3339(0, None).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_rfc3339(1_795_309_323, None).unwrap(),
            "2026-11-22T01:02:03Z"
        );
        assert_eq!(
            format_rfc3339(951_782_400, None).unwrap(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            format_rfc3339(-1, Some(5)).unwrap(),
            "1969-12-31T23:59:59.000005Z"
        );
        assert_eq!(crate::util::go_duration_ns(0), "0s");
        assert_eq!(crate::util::go_duration_ns(3_600_000_000_000), "1h0m0s");
        assert_eq!(crate::util::go_duration_ns(90_000_000_000), "1m30s");
        assert_eq!(crate::util::go_duration_ns(1_500_000_000), "1.5s");
        assert_eq!(crate::util::go_duration_ns(250_000_000), "250ms");
        assert_eq!(crate::util::go_duration_ns(-1_500), "-1.5µs");
        assert_eq!(crate::util::go_duration_ns(7), "7ns");

        // ManagedFields (Time + FieldsV1), ownerReferences, IntOrString, RawExtension.
        let meta = meta("x")
            .msg(
                13,
                Enc::new()
                    .string(5, "apps/v1")
                    .string(1, "ReplicaSet")
                    .string(3, "rs")
                    .string(4, "u1")
                    .varint(6, 1)
                    .varint(7, 0),
            )
            .msg(
                17,
                Enc::new()
                    .string(1, "kubectl")
                    .string(2, "Update")
                    .string(3, "v1")
                    .msg(4, Enc::new().int(1, 1_795_309_323).int(2, 999))
                    .string(6, "FieldsV1")
                    .msg(7, Enc::new().bytes(1, br#"{"f:data":{}}"#)),
            );
        let body = envelope("v1", "ConfigMap", Enc::new().msg(1, meta));
        let got = decode(&body).unwrap();
        assert_eq!(
            got["metadata"],
            json!({
                "name": "x",
                "creationTimestamp": null,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true, "blockOwnerDeletion": false}],
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-11-22T01:02:03Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]
            })
        );
        let port = |ios: Enc| {
            let body = envelope(
                "v1",
                "Service",
                Enc::new().msg(2, Enc::new().msg(1, Enc::new().int(3, 80).msg(4, ios))),
            );
            decode(&body).unwrap()["spec"]["ports"][0]["targetPort"].clone()
        };
        assert_eq!(
            port(Enc::new().int(1, 0).int(2, 8080).string(3, "")),
            json!(8080)
        );
        assert_eq!(
            port(Enc::new().int(1, 1).int(2, 0).string(3, "http")),
            json!("http")
        );
        let raw = decode_value(
            RawExtension,
            Wire::Len(&Enc::new().bytes(1, br#"{"a":[1]}"#).0),
            0,
        )
        .unwrap();
        assert_eq!(raw, json!({"a": [1]}));
    }

    #[test]
    fn every_referenced_message_has_a_schema() {
        let mut todo: Vec<&str> = [
            ("v1", "Namespace"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "ServiceAccount"),
            ("v1", "Service"),
            ("v1", "Pod"),
            ("v1", "PodTemplate"),
            ("v1", "Binding"),
            ("v1", "Node"),
            ("v1", "PersistentVolumeClaim"),
            ("batch/v1", "Job"),
            ("batch/v1", "CronJob"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "ReplicaSet"),
            ("apps/v1", "StatefulSet"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
            ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
            ("authorization.k8s.io/v1", "SubjectAccessReview"),
            ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
            ("authentication.k8s.io/v1", "TokenRequest"),
            ("authentication.k8s.io/v1", "TokenReview"),
            ("authentication.k8s.io/v1", "SelfSubjectReview"),
            ("policy/v1", "Eviction"),
            ("policy/v1", "PodDisruptionBudget"),
            ("autoscaling/v1", "Scale"),
            ("coordination.k8s.io/v1", "Lease"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
            ("v1", "DeleteOptions"),
        ]
        .iter()
        .map(|(av, k)| top_level_message(av, k).unwrap_or_else(|| panic!("{av} {k}")))
        .collect();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(name) = todo.pop() {
            if !seen.insert(name) {
                continue;
            }
            let fields = schema(name).unwrap_or_else(|| panic!("no schema for {name}"));
            let mut numbers = std::collections::BTreeSet::new();
            for f in fields {
                assert!(
                    numbers.insert(f.0),
                    "{name}: duplicate field number {}",
                    f.0
                );
                match f.2 {
                    One(Msg(m)) | Ptr(Msg(m)) | Rep(Msg(m)) | MapOf(_, Msg(m)) | Inline(m) => {
                        todo.push(m)
                    }
                    _ => {}
                }
            }
        }
    }

    /// Bodies captured from kubectl v1.32 (`kubectl create ...`, `kubectl auth can-i ...`,
    /// `kubectl create token ...`) against a listener that logged them.
    /// Bodies captured from kubectl v1.32 (`kubectl create job|deployment|cm|secret|ns|sa|service|
    /// role|rolebinding|clusterrole|clusterrolebinding|cronjob|priorityclass`, `kubectl auth can-i`,
    /// `kubectl auth can-i --list`, `kubectl create token`) by a listener that logged request bodies.
    #[test]
    fn real_kubectl_bodies() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "Job",
                concat!(
                    "6b3873000a0f0a0862617463682f763112034a6f621282010a110a017812001a0022002a00320038004200126332610a",
                    "100a0012001a0022002a00320038004200124d122a0a0178120762757379626f781a046563686f1a0268692a0042006a",
                    "007200800100880100900100a201001a054e65766572320042004a0052005800600068008201008a01009a0100c20100",
                    "1a082000280030003a001a002200",
                ),
                r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"creationTimestamp": null, "name": "x"}, "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"command": ["echo", "hi"], "image": "busybox", "name": "x", "resources": {}}], "restartPolicy": "Never"}}}}"#,
            ),
            (
                "SelfSubjectAccessReview plain",
                concat!(
                    "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365",
                    "7373526576696577123c0a100a0012001a0022002a00320038004200121e0a1c0a0764656661756c7412036765741a00",
                    "22002a04706f647332003a001a08080012001a0020001a002200",
                ),
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {"creationTimestamp": null}, "spec": {"resourceAttributes": {"namespace": "default", "resource": "pods", "verb": "get"}}}"#,
            ),
            (
                "ConfigMap",
                concat!(
                    "6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a017812001a0022002a0032003800420012060a016112",
                    "01621a002200",
                ),
                r#"{"apiVersion": "v1", "data": {"a": "b"}, "kind": "ConfigMap", "metadata": {"creationTimestamp": null, "name": "x"}}"#,
            ),
            (
                "Deployment",
                concat!(
                    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b0010a1b0a016412001a0022002a003200380042",
                    "005a080a036170701201641282010802120a0a080a036170701201641a6a0a1a0a0012001a0022002a00320038004200",
                    "5a080a03617070120164124c122e0a056e67696e7812056e67696e782a00320a0a001000185022002a0042006a007200",
                    "800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a0028003800",
                    "1a0c0800100018002000280038001a002200",
                ),
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"creationTimestamp": null, "labels": {"app": "d"}, "name": "d"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}}, "strategy": {}, "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "d"}}, "spec": {"containers": [{"image": "nginx", "name": "nginx", "ports": [{"containerPort": 80}], "resources": {}}]}}}}"#,
            ),
            (
                "Secret",
                concat!(
                    "6b3873000a0c0a0276311206536563726574121d0a110a017312001a0022002a0032003800420012060a016b1201761a",
                    "001a002200",
                ),
                r#"{"apiVersion": "v1", "data": {"k": "dg=="}, "kind": "Secret", "metadata": {"creationTimestamp": null, "name": "s"}}"#,
            ),
            (
                "Namespace",
                concat!(
                    "6b3873000a0f0a02763112094e616d657370616365121a0a120a026e3112001a0022002a0032003800420012001a020a",
                    "001a002200",
                ),
                r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"creationTimestamp": null, "name": "n1"}, "spec": {}}"#,
            ),
            (
                "ServiceAccount",
                concat!(
                    "6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613112001a0022002a003200380042",
                    "001a002200",
                ),
                r#"{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"creationTimestamp": null, "name": "sa1"}}"#,
            ),
            (
                "Service",
                concat!(
                    "6b3873000a0d0a027631120753657276696365126c0a210a047376633112001a0022002a003200380042005a0b0a0361",
                    "707012047376633112430a1b0a0738302d38303830120354435018502207080010903f1a002800120b0a036170701204",
                    "737663311a002209436c757374657249503a00420052005a00600068001a020a001a002200",
                ),
                r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"creationTimestamp": null, "labels": {"app": "svc1"}, "name": "svc1"}, "spec": {"ports": [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}], "selector": {"app": "svc1"}, "type": "ClusterIP"}}"#,
            ),
            (
                "RoleBinding",
                concat!(
                    "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c6542696e64696e",
                    "671288010a130a0372623112001a0022002a0032003800420012280a04557365721219726261632e617574686f72697a",
                    "6174696f6e2e6b38732e696f1a03626f62220012200a0e536572766963654163636f756e7412001a0373613122076465",
                    "6661756c741a250a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f6c651a0272311a002200",
                ),
                r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"creationTimestamp": null, "name": "rb1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "name": "sa1", "namespace": "default"}]}"#,
            ),
            (
                "ClusterRole",
                concat!(
                    "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c7573746572526f6c",
                    "6512260a130a0363723112001a0022002a00320038004200120f0a036765742a082f6865616c74687a1a002200",
                ),
                r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"creationTimestamp": null, "name": "cr1"}, "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}"#,
            ),
            (
                "ClusterRoleBinding",
                concat!(
                    "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c7573746572526f6c",
                    "6542696e64696e67126f0a140a046372623112001a0022002a0032003800420012280a0547726f75701219726261632e",
                    "617574686f72697a6174696f6e2e6b38732e696f1a02673122001a2d0a19726261632e617574686f72697a6174696f6e",
                    "2e6b38732e696f120b436c7573746572526f6c651a036372311a002200",
                ),
                r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"creationTimestamp": null, "name": "crb1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr1"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "g1"}]}"#,
            ),
            (
                "TokenRequest",
                concat!(
                    "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e526571756573741222",
                    "0a100a0012001a0022002a0032003800420012080a03666f6f20901c1a040a0012001a002200",
                ),
                r#"{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"creationTimestamp": null}, "spec": {"audiences": ["foo"], "expirationSeconds": 3600}}"#,
            ),
            (
                "SelfSubjectRulesReview",
                concat!(
                    "6b3873000a310a17617574686f72697a6174696f6e2e6b38732e696f2f7631121653656c665375626a65637452756c65",
                    "7352657669657712230a100a0012001a0022002a0032003800420012090a0764656661756c741a04180022001a002200",
                ),
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "metadata": {"creationTimestamp": null}, "spec": {"namespace": "default"}}"#,
            ),
            (
                "SelfSubjectAccessReview scale",
                concat!(
                    "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365",
                    "737352657669657712590a100a0012001a0022002a00320038004200123b0a390a0b6b7562652d73797374656d120663",
                    "72656174651a0022002a106465706c6f796d656e74732e6170707332057363616c653a057363616c651a08080012001a",
                    "0020001a002200",
                ),
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {"creationTimestamp": null}, "spec": {"resourceAttributes": {"name": "scale", "namespace": "kube-system", "resource": "deployments.apps", "subresource": "scale", "verb": "create"}}}"#,
            ),
            (
                "SelfSubjectAccessReview nonResource",
                concat!(
                    "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365",
                    "7373526576696577122f0a100a0012001a0022002a003200380042001211120f0a082f6865616c74687a12036765741a",
                    "08080012001a0020001a002200",
                ),
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {"creationTimestamp": null}, "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}"#,
            ),
            (
                "CronJob",
                concat!(
                    "6b3873000a130a0862617463682f7631120743726f6e4a6f6212a4010a120a02636a12001a0022002a00320038004200",
                    "128b010a0b2a2f31202a202a202a202a1a002a7a0a120a02636a12001a0022002a00320038004200126432620a100a00",
                    "12001a0022002a00320038004200124e12270a02636a120762757379626f781a04646174652a0042006a007200800100",
                    "880100900100a201001a094f6e4661696c757265320042004a0052005800600068008201008a01009a0100c201001a00",
                    "1a002200",
                ),
                r#"{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"creationTimestamp": null, "name": "cj"}, "spec": {"jobTemplate": {"metadata": {"creationTimestamp": null, "name": "cj"}, "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"command": ["date"], "image": "busybox", "name": "cj", "resources": {}}], "restartPolicy": "OnFailure"}}}}, "schedule": "*/1 * * * *"}}"#,
            ),
            (
                "PriorityClass",
                concat!(
                    "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312300a120a",
                    "02706312001a0022002a00320038004200100a180022002a14507265656d70744c6f7765725072696f726974791a0022",
                    "00",
                ),
                r#"{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"creationTimestamp": null, "name": "pc"}, "preemptionPolicy": "PreemptLowerPriority", "value": 10}"#,
            ),
            (
                "Role",
                concat!(
                    "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c65122d0a120a02",
                    "723112001a0022002a0032003800420012170a036765740a046c69737412001a04706f6473220270311a002200",
                ),
                r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"creationTimestamp": null, "name": "r1"}, "rules": [{"apiGroups": [""], "resourceNames": ["p1"], "resources": ["pods"], "verbs": ["get", "list"]}]}"#,
            ),
        ];
        for (name, body, want) in cases {
            let want: Value = serde_json::from_str(want).unwrap();
            assert_eq!(decode(&hex(body)).unwrap(), want, "{name}");
        }
    }
}
