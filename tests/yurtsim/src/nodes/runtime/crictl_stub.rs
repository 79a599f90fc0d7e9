//! The `crictl` stub: records the call and prints the sim's answer (the call-log/ack/results
//! protocol of tools.rs). The sim decides everything, including connection errors.

pub(super) const CRICTL: &str = r#"
record crictl "$@"
MY_SEQ=$SEQ
limit=${YURTSIM_CRICTL_TIMEOUT_MS:-60000}
waited=0
while :; do
    a=0
    read -r a 2>/dev/null < "$ACK"
    case $a in ''|*[!0-9]*) a=0 ;; esac
    [ "$a" -ge "$MY_SEQ" ] && break
    waited=$(( waited + 20 ))
    if [ "$waited" -ge "$limit" ]; then
        echo "crictl (yurtsim): the node's runtime did not answer" >&2
        exit 1
    fi
    sleep 0.02
done
RES="$ACK.results/$MY_SEQ"
if [ ! -f "$RES.rc" ]; then
    echo "crictl (yurtsim): no answer for this call" >&2
    exit 1
fi
cat "$RES.out"
cat "$RES.err" >&2
read -r rc < "$RES.rc"
rm -f "$RES.out" "$RES.err" "$RES.rc"
exit "$rc"
"#;
