"""A TEST DOUBLE of kube-apiserver (Kubernetes 1.37), for the dra-capacity test suite. Not a product.

It serves real HTTPS on 127.0.0.1 with its own CA and writes a kubeconfig, so the official `kubernetes`
client, the real `kubectl` and the project's own code talk to it unchanged. It implements (see README.md in
this directory for the full list and the Python interface):

* legacy discovery (`/api`, `/apis`, `/apis/<group>/<version>`, `/version`) for core/v1 (Namespaces, Nodes,
  Pods with status and binding, Events, Secrets, ConfigMaps, ServiceAccounts), events.k8s.io/v1 Events,
  coordination.k8s.io/v1 Leases, resource.k8s.io/v1 (DeviceClasses, ResourceSlices, ResourceClaims with
  status) and admissionregistration.k8s.io/v1 webhook configurations;
* GET, LIST (limit/continue), WATCH (resourceVersion, 410 Gone, BOOKMARKs), CREATE, PUT, PATCH (merge, JSON,
  strategic merge), DELETE (preconditions, propagationPolicy), with one shared monotonic resourceVersion,
  uid, creationTimestamp, generation, generateName, and upstream's Status errors;
* label selectors and the field selectors controllers use;
* status subresources, pods/binding, finalizers and deletionTimestamp, owner-reference garbage collection,
  the resourceclaim controller's reservedFor and delete-protection cleanup;
* admission webhooks (mutating then validating) over verified HTTPS;
* fault injection, pausing, dropped watches and a request log.

It does NOT implement: protobuf, server-side apply, aggregated discovery, RBAC/authorization (every
authenticated user may do everything), API versions other than the ones listed, conversion, CRDs,
field managers (managedFields), admission plugins other than NamespaceLifecycle and the two webhook
plugins, the kubelet beyond finishing graceful pod deletion, or most of the native validation of the
types (only the rules listed in README.md).
"""

from .double import KubeAPIServer
from .faults import Fault, RecordedRequest
from .resources import KUBERNETES_VERSION
from .statuses import ApiError

__all__ = ["KUBERNETES_VERSION", "ApiError", "Fault", "KubeAPIServer", "RecordedRequest"]
