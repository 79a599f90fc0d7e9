//! Events as the sim's components record them (kube-controller-manager's controllers and the
//! kubelets alike): one core/v1 Event per occurrence, written through the verbs, best effort as
//! client-go's recorder is (a failed write is dropped).

use serde_json::{Value, json};

use crate::api::registry::ResourceInfo;
use crate::api::{Api, Ctx};
use crate::util;

impl Api {
    /// Records an Event of `typ` (`Normal`, `Warning`) about `involved` (an object of `res`),
    /// reported by `component`.
    pub fn record_event(
        &self,
        involved: &Value,
        res: &ResourceInfo,
        typ: &str,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        let events = self.info("", "events");
        let ns = involved["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let name = involved["metadata"]["name"].as_str().unwrap_or_default();
        let now = util::now();
        let ev = json!({"metadata": {"name": format!("{name}.{:x}", rand_u64()), "namespace": ns},
            "involvedObject": {"kind": res.kind, "namespace": involved["metadata"]["namespace"], "name": name, "uid": involved["metadata"]["uid"], "apiVersion": res.api_version(), "resourceVersion": involved["metadata"]["resourceVersion"]},
            "reason": reason, "message": message, "source": {"component": component}, "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": typ,
            "reportingComponent": component, "reportingInstance": ""});
        let _ = self.create(&events, &ns, ev, &Ctx::system(component));
    }
}

fn rand_u64() -> u64 {
    use rand::Rng;
    rand::rng().random()
}
