
use builtin;
use str;

set edit:completion:arg-completer[yurtctl] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'yurtctl'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'yurtctl'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand convert 'Convert this Kubernetes cluster into an OpenYurt cluster'
            cand revert 'Turn an OpenYurt cluster made by convert back into the original cluster'
            cand status 'Show what convert did and where each node stands (read-only)'
            cand diagnose 'Find what is wrong in a converted cluster, and what to do about it (read-only)'
            cand staticpod 'Roll out, inspect and roll back static pods across nodes, from the client side'
            cand images 'List the images a conversion pulls, to mirror them for air-gapped clusters'
            cand completion 'Print a shell completion script'
            cand man 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout'
            cand playground 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;convert'= {
            cand --cloud-nodes 'Nodes that become cloud nodes (comma-separated; control-plane nodes are cloud nodes unless named in --edge-nodes)'
            cand --edge-nodes 'Only these nodes become edge nodes (comma-separated); other workers are left alone'
            cand --profile 'Component set to install'
            cand --servant-image 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]'
            cand --openyurt-version 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)'
            cand --image-repository 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)'
            cand --image 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)'
            cand --image-pull-secret 'A kube-system Secret of type kubernetes.io/dockerconfigjson the node Jobs and the components pull their images with (repeatable; a static-pod YurtHub cannot use one)'
            cand --concurrency 'Node Jobs running at once'
            cand --job-timeout 'Time allowed for each node''s Job'
            cand --skip-phases 'Phases to skip (comma-separated ids, in run order: lock, preflight, preflight/nodes, label-nodes, components, kcm, nodes/edge, nodes/cloud, verify)'
            cand --autonomous-nodes 'Edge nodes that get the autonomy annotation (comma-separated) [default: every edge node]'
            cand --provider 'The kind of cluster; convert refuses when the nodes say otherwise'
            cand --disable-nodelifecycle 'Disable kube-controller-manager''s nodelifecycle controller on control-plane nodes'
            cand --ignore-preflight-errors 'Preflight checks whose errors become warnings (comma-separated, any case: KubernetesVersion, Provider, or all)'
            cand --nodepool 'The NodePool every edge node joins (profiles with NodePools) [default: the profile''s, edge]'
            cand --nodepools-from-label 'One edge NodePool per value of this node label, e.g. topology.kubernetes.io/zone (profiles with NodePools)'
            cand --cloud-nodepool 'The NodePool cloud nodes join (profiles with NodePools) [default: the profile''s, cloud]'
            cand --token-ttl 'Lifetime of the bootstrap token convert creates for YurtHub'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --all-edge 'Every node that is not a cloud node becomes an edge node (the default)'
            cand --force-unlock 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)'
            cand --skip-workload-restart 'Do not restart the nodes'' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)'
            cand --require-all-ready 'Refuse to start while any selected node is NotReady (by default such a node is only skipped and reported)'
            cand --deploy-yurttunnel 'Deploy yurt-tunnel-server and yurt-tunnel-agent (profiles that have them)'
            cand --enable-app-manager 'Deploy yurt-app-manager (profiles that have it)'
            cand --force-conflicts 'Take over fields of our objects that other field managers own (server-side apply)'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;revert'= {
            cand --nodes 'Only these nodes (comma-separated); the components, the journal and the lock stay until a revert of all nodes'
            cand --concurrency 'Node Jobs running at once'
            cand --job-timeout 'Time allowed for each node''s Job'
            cand --skip-phases 'Phases to skip (comma-separated ids, in run order: lock, preflight, cleanup-jobs, nodes/cloud, nodes/edge, kcm, components, label-nodes, verify)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --force-unlock 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)'
            cand --skip-workload-restart 'Do not restart the nodes'' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;status'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;diagnose'= {
            cand --collect 'Also write what a bug report needs into one .tar.gz in DIR, secrets and tokens redacted: the findings, versions, kube-system''s events, the logs of yurtctl''s node Job pods and of yurt-manager, the journal'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;staticpod'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand upgrade 'Roll a new revision of a static pod out to the nodes that run it'
            cand status 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
            cand rollback 'Roll a previous revision out again, with the same controls as upgrade'
            cand ota 'OTA: upgrade chosen nodes now, from the client side'
            cand adopt 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;staticpod;upgrade'= {
            cand --image 'New image, `IMAGE` for a single-container pod or `CONTAINER=IMAGE` (repeatable)'
            cand -f 'The new pod (one v1 Pod document)'
            cand --filename 'The new pod (one v1 Pod document)'
            cand --manifest 'The manifest file''s base name on nodes and the ConfigMap key [default: the stored one, else NAME]'
            cand --strategy 'How nodes get the new revision'
            cand -l 'Only nodes whose labels match this selector (kubectl syntax)'
            cand --selector 'Only nodes whose labels match this selector (kubectl syntax)'
            cand --max-unavailable 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up'
            cand --min-ready-seconds 'A node counts as upgraded once its new pod has been Ready this long'
            cand --node-timeout 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed'
            cand --max-failures 'Failed nodes tolerated before the rollout stops (0: stop at the first)'
            cand --partition 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down'
            cand --priority 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)'
            cand --canary 'Upgrade only N nodes in this run, then stop (re-run to continue)'
            cand --servant-image 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`'
            cand --image-pull-secret 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --pause 'Store the new revision but start no node (re-run without --pause to resume)'
            cand --force-unlock 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;staticpod;status'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -w 'Print again whenever the status changes (a mirror pod or the stored revision; with -o json|yaml one document per change); runs until Ctrl-C'
            cand --watch 'Print again whenever the status changes (a mirror pod or the stored revision; with -o json|yaml one document per change); runs until Ctrl-C'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'yurtctl;staticpod;rollback'= {
            cand --to-revision 'The revision number to go back to (see `status -o yaml`) [default: the previous one]'
            cand --strategy 'How nodes get the old revision'
            cand -l 'Only nodes whose labels match this selector (kubectl syntax)'
            cand --selector 'Only nodes whose labels match this selector (kubectl syntax)'
            cand --max-unavailable 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up'
            cand --min-ready-seconds 'A node counts as upgraded once its new pod has been Ready this long'
            cand --node-timeout 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed'
            cand --max-failures 'Failed nodes tolerated before the rollout stops (0: stop at the first)'
            cand --partition 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down'
            cand --priority 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)'
            cand --canary 'Upgrade only N nodes in this run, then stop (re-run to continue)'
            cand --servant-image 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`'
            cand --image-pull-secret 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --pause 'Store the new revision but start no node (re-run without --pause to resume)'
            cand --force-unlock 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;staticpod;ota'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand apply 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;staticpod;ota;apply'= {
            cand --node 'Nodes to upgrade now (repeatable or comma-separated)'
            cand --node-timeout 'Time allowed per node (Job and new pod Ready); then it is restored'
            cand --servant-image 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`'
            cand --image-pull-secret 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --force-unlock 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'yurtctl;staticpod;ota;help'= {
            cand apply 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;staticpod;ota;help;apply'= {
        }
        &'yurtctl;staticpod;ota;help;help'= {
        }
        &'yurtctl;staticpod;adopt'= {
            cand --manifest 'The manifest file''s base name on nodes (spec.staticPodManifest) [default: the stored one, else NAME]'
            cand --strategy 'The set''s upgradeStrategy: how yurt-manager rolls out later template changes'
            cand --max-unavailable 'The set''s maxUnavailable (advanced-rolling-update)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;staticpod;help'= {
            cand upgrade 'Roll a new revision of a static pod out to the nodes that run it'
            cand status 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
            cand rollback 'Roll a previous revision out again, with the same controls as upgrade'
            cand ota 'OTA: upgrade chosen nodes now, from the client side'
            cand adopt 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;staticpod;help;upgrade'= {
        }
        &'yurtctl;staticpod;help;status'= {
        }
        &'yurtctl;staticpod;help;rollback'= {
        }
        &'yurtctl;staticpod;help;ota'= {
            cand apply 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)'
        }
        &'yurtctl;staticpod;help;ota;apply'= {
        }
        &'yurtctl;staticpod;help;adopt'= {
        }
        &'yurtctl;staticpod;help;help'= {
        }
        &'yurtctl;images'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand list 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;images;list'= {
            cand --profile 'Component set whose images to list'
            cand --servant-image 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]'
            cand --openyurt-version 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)'
            cand --image-repository 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)'
            cand --image 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;images;help'= {
            cand list 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;images;help;list'= {
        }
        &'yurtctl;images;help;help'= {
        }
        &'yurtctl;completion'= {
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;man'= {
            cand --dir 'Write every page (yurtctl.1, yurtctl-convert.1, …) into this directory instead of printing yurtctl(1) on stdout'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'yurtctl;playground'= {
            cand --nodes 'Nodes of the simulated cluster (one of them the control plane)'
            cand --layout 'What the nodes'' disks look like (kubelet unit files, kubeadm-flags.env, …): kubeadm (deb packages), kubeadm-usr (pkgs.k8s.io / rpm), kind or minikube'
            cand --profile 'Component set convert installs'
            cand --apiserver 'The API server: yurtsim''s own (sim), or a real Kubernetes v1.37.2 control plane with OpenYurt v1.7.0''s real yurt-manager and YurtHub (real: a checkout of yurtctl where tests/real/build.sh has built them; profile openyurt-v1.7)'
            cand --state-dir 'Where the cluster keeps its state (kubeconfig, node file systems) [default: a new temporary directory, removed at the end]'
            cand -o 'Output format of the result on stdout'
            cand --output 'Output format of the result on stdout'
            cand --dry-run 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)'
            cand --kubeconfig 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -n 'Namespace of namespaced objects a command names (static pods)'
            cand --namespace 'Namespace of namespaced objects a command names (static pods)'
            cand --qps 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)'
            cand --burst 'API requests allowed in a burst above a --qps limit'
            cand --progress 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none'
            cand --keep 'Keep the cluster running after the last step until Ctrl-C [default: when stdin is a terminal]'
            cand --no-keep 'Shut the cluster down after the last step'
            cand -v 'More log detail on stderr (-v debug, -vv trace)'
            cand --verbose 'More log detail on stderr (-v debug, -vv trace)'
            cand -q 'Only warnings and errors on stderr'
            cand --quiet 'Only warnings and errors on stderr'
            cand -y 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --yes 'Do not ask for confirmation (required when stdin is not a terminal)'
            cand --no-color 'No colours (also when the NO_COLOR environment variable is set)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'yurtctl;help'= {
            cand convert 'Convert this Kubernetes cluster into an OpenYurt cluster'
            cand revert 'Turn an OpenYurt cluster made by convert back into the original cluster'
            cand status 'Show what convert did and where each node stands (read-only)'
            cand diagnose 'Find what is wrong in a converted cluster, and what to do about it (read-only)'
            cand staticpod 'Roll out, inspect and roll back static pods across nodes, from the client side'
            cand images 'List the images a conversion pulls, to mirror them for air-gapped clusters'
            cand completion 'Print a shell completion script'
            cand man 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout'
            cand playground 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'yurtctl;help;convert'= {
        }
        &'yurtctl;help;revert'= {
        }
        &'yurtctl;help;status'= {
        }
        &'yurtctl;help;diagnose'= {
        }
        &'yurtctl;help;staticpod'= {
            cand upgrade 'Roll a new revision of a static pod out to the nodes that run it'
            cand status 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
            cand rollback 'Roll a previous revision out again, with the same controls as upgrade'
            cand ota 'OTA: upgrade chosen nodes now, from the client side'
            cand adopt 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
        }
        &'yurtctl;help;staticpod;upgrade'= {
        }
        &'yurtctl;help;staticpod;status'= {
        }
        &'yurtctl;help;staticpod;rollback'= {
        }
        &'yurtctl;help;staticpod;ota'= {
            cand apply 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)'
        }
        &'yurtctl;help;staticpod;ota;apply'= {
        }
        &'yurtctl;help;staticpod;adopt'= {
        }
        &'yurtctl;help;images'= {
            cand list 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
        }
        &'yurtctl;help;images;list'= {
        }
        &'yurtctl;help;completion'= {
        }
        &'yurtctl;help;man'= {
        }
        &'yurtctl;help;playground'= {
        }
        &'yurtctl;help;help'= {
        }
    ]
    $completions[$command]
}
