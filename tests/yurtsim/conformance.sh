#!/usr/bin/env bash
# Drives a running yurtsim with the real kubectl and checks that it answers as a real cluster
# would. Usage: KUBECONFIG=STATE_DIR/kubeconfig tests/yurtsim/conformance.sh
# Every check prints one line; the script stops at the first failure with what was expected.
set -euo pipefail

: "${KUBECONFIG:?set KUBECONFIG to the kubeconfig of the simulated cluster}"
export KUBECONFIG
ns=conformance
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT

pass=0
fail() { echo "FAIL: $*" >&2; echo "$pass passed, 1 failed"; exit 1; }
ok() { pass=$((pass + 1)); echo "ok   $*"; }
# expect_eq WHAT ACTUAL EXPECTED
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected [$3], got [$2]"; ok "$1"; }
expect_contains() { grep -qF -- "$3" <<<"$2" || fail "$1: expected output containing [$3], got [$2]"; ok "$1"; }

kubectl create namespace "$ns" >/dev/null

# Discovery and reads.
node_names=$(kubectl get nodes -o jsonpath='{.items[*].metadata.name}')
expect_eq "get nodes -o json lists every node" "$(kubectl get nodes -o json | grep -c '"kind": "Node"')" "$(wc -w <<<"$node_names" | tr -d ' ')"
expect_contains "get pods -A shows the control plane's static pods" "$(kubectl get pods -A)" "kube-controller-manager-"
expect_contains "api-resources lists batch jobs" "$(kubectl api-resources --api-group=batch -o name)" "jobs.batch"

# apply: create, then update.
cat >"$work/cm.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  namespace: $ns
data:
  key: one
YAML
expect_contains "apply creates" "$(kubectl apply -f "$work/cm.yaml")" "configmap/applied created"
sed -i 's/key: one/key: two/' "$work/cm.yaml"
expect_contains "apply updates" "$(kubectl apply -f "$work/cm.yaml")" "configmap/applied configured"
expect_eq "apply changed the data" "$(kubectl -n $ns get cm applied -o jsonpath='{.data.key}')" "two"
expect_contains "apply again is unchanged" "$(kubectl apply -f "$work/cm.yaml")" "configmap/applied unchanged"

# Server-side apply records the field manager.
sed -i 's/key: two/key: three/' "$work/cm.yaml"
kubectl apply --server-side --force-conflicts --field-manager=conformance -f "$work/cm.yaml" >/dev/null
expect_contains "apply --server-side records its manager" "$(kubectl -n $ns get cm applied -o yaml --show-managed-fields)" "manager: conformance"
cat >"$work/ssa.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa-only
  namespace: $ns
data:
  a: "1"
YAML
expect_contains "apply --server-side creates" "$(kubectl apply --server-side -f "$work/ssa.yaml")" "serverside-applied"
out=$(kubectl -n $ns patch cm ssa-only --type merge -p '{"data":{"a":"2"}}' --field-manager=intruder)
if kubectl apply --server-side -f "$work/ssa.yaml" >"$work/conflict.out" 2>&1; then fail "a conflicting server-side apply must be refused"; fi
expect_contains "conflicting server-side apply names the other manager" "$(cat "$work/conflict.out")" 'conflict with "intruder"'

# The three patch types.
kubectl -n $ns patch cm applied --type merge -p '{"data":{"m":"merge"}}' >/dev/null
kubectl -n $ns patch cm applied --type json -p '[{"op":"add","path":"/data/j","value":"json"}]' >/dev/null
kubectl -n $ns patch cm applied --type strategic -p '{"data":{"s":"strategic"}}' >/dev/null
expect_eq "patch merge|json|strategic" "$(kubectl -n $ns get cm applied -o jsonpath='{.data.m} {.data.j} {.data.s}')" "merge json strategic"
cat >"$work/deploy.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: $ns
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: nginx:1.19.1}
      - {name: sidecar, image: busybox:1.36}
YAML
kubectl apply -f "$work/deploy.yaml" >/dev/null
kubectl -n $ns patch deploy web --type strategic -p '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.19.2"}]}}}}' >/dev/null
expect_eq "strategic merge patches containers by name" "$(kubectl -n $ns get deploy web -o jsonpath='{.spec.template.spec.containers[*].image}')" "nginx:1.19.2 busybox:1.36"
kubectl -n $ns rollout status deploy/web --timeout=20s >/dev/null
ok "rollout status sees the deployment available"

# label and annotate.
kubectl -n $ns label cm applied tier=web >/dev/null
kubectl -n $ns annotate cm applied note=hello >/dev/null
expect_eq "label and annotate" "$(kubectl -n $ns get cm -l tier=web -o jsonpath='{.items[*].metadata.name} {.items[0].metadata.annotations.note}')" "applied hello"

# A stale resourceVersion is refused with a conflict.
kubectl -n $ns get cm applied -o yaml >"$work/stale.yaml"
kubectl -n $ns label cm applied bump=1 >/dev/null
if kubectl replace -f "$work/stale.yaml" >"$work/replace.out" 2>&1; then fail "replace with a stale resourceVersion must be refused"; fi
expect_contains "stale replace is a Conflict" "$(cat "$work/replace.out")" "the object has been modified"

# get -w receives events.
kubectl -n $ns get cm -w --output-watch-events >"$work/watch.out" 2>&1 &
watcher=$!
sleep 1
kubectl -n $ns create configmap watched --from-literal=a=b >/dev/null
kubectl -n $ns delete configmap watched >/dev/null
for _ in $(seq 50); do grep -q "DELETED" "$work/watch.out" && break; sleep 0.1; done
kill $watcher 2>/dev/null || true
expect_contains "get -w sees ADDED" "$(cat "$work/watch.out")" "ADDED"
expect_contains "get -w sees DELETED" "$(cat "$work/watch.out")" "DELETED"

# A Job runs for real; wait and logs.
kubectl -n $ns create job hello --image=busybox -- sh -c 'echo hello from the sim' >/dev/null
kubectl -n $ns wait --for=condition=complete job/hello --timeout=30s >/dev/null
ok "create job + wait --for=condition=complete"
expect_eq "logs of the Job's pod" "$(kubectl -n $ns logs job/hello)" "hello from the sim"
kubectl -n $ns create job sad --image=busybox -- sh -c 'exit 3' >/dev/null
kubectl -n $ns wait --for=condition=failed job/sad --timeout=60s >/dev/null
ok "a failing Job ends Failed"

# A component started with a bad flag crash-loops, and get pods shows it as the real kubectl
# prints it: STATUS Error or CrashLoopBackOff, RESTARTS counting (the kubelet restarts it after
# its 10 s back-off), the fatal line in its log.
kubectl -n $ns run badflag --image=openyurt/yurt-tunnel-agent:v0.6.1 --restart=Always \
  --command -- yurt-tunnel-agent --no-such-flag >/dev/null
restarts=0
for _ in $(seq 60); do
  line=$(kubectl -n $ns get pod badflag --no-headers)
  read -r _name _ready status restarts _rest <<<"$line"
  case "$status" in CrashLoopBackOff|Error) [ "${restarts:-0}" -gt 0 ] 2>/dev/null && break ;; esac
  sleep 1
done
# (no `| head`: with pipefail a closed pipe would fail kubectl with SIGPIPE)
listing=$(kubectl -n $ns get pods)
header=${listing%%$'\n'*}
expect_eq "get pods has the real columns" "$(echo $header)" "NAME READY STATUS RESTARTS AGE"
case "$status" in
  CrashLoopBackOff|Error) ok "a crash-looping pod shows STATUS $status" ;;
  *) fail "a crash-looping pod: expected STATUS CrashLoopBackOff or Error, got [$line]" ;;
esac
[ "${restarts:-0}" -gt 0 ] 2>/dev/null || fail "a crash-looping pod: expected RESTARTS > 0, got [$line]"
ok "a crash-looping pod counts its restarts ($restarts)"
expect_contains "logs shows the component's fatal line" \
  "$(kubectl -n $ns logs badflag)" "yurttunnel-agent failed: unknown flag: --no-such-flag"
kubectl -n $ns delete pod badflag --wait=false >/dev/null

# auth can-i answers from SelfSubjectAccessReview.
expect_eq "auth can-i" "$(kubectl auth can-i create jobs -n kube-system)" "yes"

# RBAC per identity: kubectl --as impersonates, and the answer comes from Roles and bindings.
sa="system:serviceaccount:$ns:reader"
kubectl -n $ns create serviceaccount reader >/dev/null
expect_eq "auth can-i --as an unbound ServiceAccount" "$(kubectl auth can-i list pods --as="$sa" || true)" "no"
kubectl create clusterrole conformance-pod-reader --verb=list,watch --resource=pods >/dev/null
kubectl create clusterrolebinding conformance-pod-reader --clusterrole=conformance-pod-reader --serviceaccount=$ns:reader >/dev/null
expect_eq "auth can-i --as a bound ServiceAccount" "$(kubectl auth can-i list pods --as="$sa")" "yes"
expect_eq "auth can-i --as: list does not grant delete" "$(kubectl auth can-i delete pods --as="$sa" || true)" "no"
expect_contains "get --as without a grant is Forbidden with the apiserver's message" \
  "$(kubectl -n $ns get secrets --as="$sa" 2>&1 || true)" \
  "User \"$sa\" cannot list resource \"secrets\" in API group \"\" in the namespace \"$ns\""
kubectl delete clusterrolebinding conformance-pod-reader >/dev/null
kubectl delete clusterrole conformance-pod-reader >/dev/null

# delete.
expect_contains "delete" "$(kubectl -n $ns delete cm applied)" "deleted"
if kubectl -n $ns get cm applied >"$work/get.out" 2>&1; then fail "a deleted object must be gone"; fi
expect_contains "get after delete is NotFound" "$(cat "$work/get.out")" "NotFound"

# The sim's own metrics endpoint counts what kubectl did.
expect_contains "metrics count kubectl's requests" "$(kubectl get --raw /yurtsim/v1/metrics)" '"create jobs.batch":'

kubectl delete namespace "$ns" --wait=true --timeout=30s >/dev/null
ok "namespace deletion finishes"
echo "$pass passed, 0 failed"
