"""ResourceClaims generated from ResourceClaimTemplates, as kube-controller-manager's resourceclaim controller
generates them (pkg/controller/resourceclaim/controller.go, `handleClaim`).

For a pod entry with `resourceClaimTemplateName` and no claim yet, the controller creates one claim per pod:
`generateName` `<pod>-<entry>-` (both parts cut in proportion when longer than 57 characters, so the
entry's name survives a long pod name), the template's labels and annotations plus the annotation
`resource.kubernetes.io/pod-claim-name: <entry>`, a controller ownerReference to the pod, and the template's
spec. The API server then gives it a name; the controller records it in the pod's
`status.resourceClaimStatuses`.
"""

from __future__ import annotations

import random

from resourceapi.api.core_v1 import Pod
from resourceapi.api.meta import ObjectMeta
from resourceapi.api.resource_v1 import ResourceClaim, ResourceClaimTemplate
from resourceapi.machinery.names import generate_name

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
MAX_BASE_LENGTH = 57  # leaves room for the hyphen and 5 random characters in a 63-character name


def claim_generate_name(pod_name: str, entry_name: str) -> str:
    """The controller's `generateName`: `<pod>-<entry>-`, or both parts cut in proportion to their length
    (and then no trailing hyphen, as upstream's code has it)."""
    generate = f"{pod_name}-{entry_name}-"
    if len(generate) <= MAX_BASE_LENGTH:
        return generate
    total = len(generate)
    return (
        pod_name[: len(pod_name) * MAX_BASE_LENGTH // total]
        + "-"
        + entry_name[: len(entry_name) * MAX_BASE_LENGTH // total]
    )


def claim_from_template(
    pod: Pod, entry_name: str, template: ResourceClaimTemplate, rng: random.Random | None = None
) -> ResourceClaim:
    """The claim the controller creates for `pod`'s entry, named as the API server would name it."""
    meta = template.spec.metadata
    annotations = dict(meta.annotations or {})
    annotations[POD_CLAIM_NAME_ANNOTATION] = entry_name
    generate = claim_generate_name(pod.name, entry_name)
    return ResourceClaim(
        metadata=ObjectMeta(
            name=generate_name(generate, rng),
            generate_name=generate,
            namespace=pod.namespace,
            labels=dict(meta.labels) if meta.labels else None,
            annotations=annotations,
            owner_references=[pod.controller_reference()],
        ),
        spec=template.spec.spec.model_copy(deep=True),
    )
