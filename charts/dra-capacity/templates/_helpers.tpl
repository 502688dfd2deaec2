{{/*
Names. Every object name is <fullname>-<suffix>, cut so that the whole stays a DNS label (63): the prefix is
trimmed, never the suffix, so two components can never collide after truncation.
*/}}
{{- define "dra-capacity.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<name>, or the release alone when it already contains the name; fullnameOverride wins. */}}
{{- define "dra-capacity.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "dra-capacity.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* <fullname>-<suffix> within 63 characters: call with (list $ "suffix"). */}}
{{- define "dra-capacity.componentName" -}}
{{- $root := index . 0 -}}
{{- $suffix := index . 1 -}}
{{- $prefix := include "dra-capacity.fullname" $root | trunc (int (sub 62 (len $suffix))) | trimSuffix "-" -}}
{{- printf "%s-%s" $prefix $suffix -}}
{{- end -}}

{{- define "dra-capacity.webhookName" -}}{{ include "dra-capacity.componentName" (list . "webhook") }}{{- end -}}
{{- define "dra-capacity.binderName" -}}{{ include "dra-capacity.componentName" (list . "binder") }}{{- end -}}
{{- define "dra-capacity.certsName" -}}{{ include "dra-capacity.componentName" (list . "webhook-certs") }}{{- end -}}
{{- define "dra-capacity.hooksName" -}}{{ include "dra-capacity.componentName" (list . "hooks") }}{{- end -}}
{{- define "dra-capacity.routingName" -}}{{ include "dra-capacity.componentName" (list . "pod-routing") }}{{- end -}}

{{- define "dra-capacity.tlsSecretName" -}}
{{- if .Values.tls.secretName -}}
{{- .Values.tls.secretName -}}
{{- else -}}
{{- include "dra-capacity.componentName" (list . "webhook-tls") -}}
{{- end -}}
{{- end -}}

{{- define "dra-capacity.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
The one label helper: labels of every object; with a component, also its component label. Call with
(list $ "webhook") or (list $ "").
*/}}
{{- define "dra-capacity.labels" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- include "dra-capacity.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: dra-capacity
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels (a subset of the labels above, immutable in Deployments). */}}
{{- define "dra-capacity.selectorLabels" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
app.kubernetes.io/name: {{ include "dra-capacity.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- if $component }}
app.kubernetes.io/component: {{ $component }}
{{- end }}
{{- end -}}

{{/* --feature-gates value, sorted for stable output. */}}
{{- define "dra-capacity.featureGates" -}}
{{- $gates := list -}}
{{- range $k, $v := .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" $k $v) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* --protected-sources value: the ipBlock CIDRs of networkPolicy.webhookFrom (the API server's
addresses), never evicted under the webhook's connection cap. Selectors name no address and are left out. */}}
{{- define "dra-capacity.protectedSources" -}}
{{- $cidrs := list -}}
{{- range .Values.networkPolicy.webhookFrom -}}
{{- with .ipBlock -}}{{- with .cidr -}}{{- $cidrs = append $cidrs . -}}{{- end -}}{{- end -}}
{{- end -}}
{{- join "," $cidrs -}}
{{- end -}}

{{/* Webhook client config, with caBundle only in `secret` mode (self: the controller injects it;
cert-manager: cainjector does). Leaving it out elsewhere keeps GitOps diffs quiet. */}}
{{- define "dra-capacity.clientConfig" -}}
clientConfig:
  service:
    name: {{ include "dra-capacity.webhookName" .root }}
    namespace: {{ .root.Release.Namespace }}
    path: {{ .path }}
    port: {{ .root.Values.webhook.servicePort }}
  {{- if eq .root.Values.tls.mode "secret" }}
  caBundle: {{ .root.Values.tls.caBundle }}
  {{- end }}
{{- end -}}

{{/* Annotations on the webhook configurations: cert-manager's cainjector source in that mode. */}}
{{- define "dra-capacity.webhookAnnotations" -}}
{{- if eq .Values.tls.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "dra-capacity.webhookName" .) }}
{{- end }}
{{- end -}}

{{/* The DeviceClass webhook, one definition for its validating and mutating registrations. */}}
{{- define "dra-capacity.deviceClassWebhook" -}}
{{- $v := .root.Values.webhook -}}
- name: {{ .kind }}.deviceclasses.dra-capacity.io
  admissionReviewVersions: ["v1"]
  sideEffects: None
  matchPolicy: Equivalent
  {{- if eq .kind "mutate" }}
  reinvocationPolicy: Never
  {{- end }}
  failurePolicy: {{ .failurePolicy }}
  timeoutSeconds: {{ $v.timeoutSeconds }}
  {{- include "dra-capacity.clientConfig" (dict "root" .root "path" (printf "/%s" .kind)) | nindent 2 }}
  rules:
    - apiGroups: ["resource.k8s.io"]
      apiVersions: ["v1"]
      resources: ["deviceclasses"]
      operations: ["CREATE", "UPDATE"]
      scope: Cluster
  {{- with $v.deviceClasses.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.deviceClasses.matchConditions }}
  matchConditions:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Names of the webhook configurations the certificate controller injects caBundle into. */}}
{{- define "dra-capacity.webhookConfigFlags" -}}
- --webhook-config=validating/{{ include "dra-capacity.webhookName" . }}
- --webhook-config=mutating/{{ include "dra-capacity.webhookName" . }}
{{- if .Values.webhook.podRouting.enabled }}
- --webhook-config=mutating/{{ include "dra-capacity.routingName" . }}
{{- end }}
{{- end -}}

{{/* The service-account token, mounted only into the containers that call the API (the pods set
automountServiceAccountToken: false). Same content as the kubelet's automatic mount. */}}
{{- define "dra-capacity.apiTokenVolume" -}}
- name: kube-api-access
  projected:
    defaultMode: 0444
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3607
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                fieldPath: metadata.namespace
{{- end -}}

{{- define "dra-capacity.apiTokenMount" -}}
- name: kube-api-access
  mountPath: /var/run/secrets/kubernetes.io/serviceaccount
  readOnly: true
{{- end -}}

{{/* Spread across nodes and zones, best effort. */}}
{{- define "dra-capacity.topologySpread" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "dra-capacity.selectorLabels" . | nindent 8 }}
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "dra-capacity.selectorLabels" . | nindent 8 }}
{{- end -}}

{{- /* The apiVersion of the chart's DeviceTaintRules, or "" for none: binder.deviceTaintRuleAPIVersion, else
what the cluster serves (resource.k8s.io/v1 from 1.37; v1beta2 on 1.36 only where an admin turned it on),
else v1 when the Kubernetes version is 1.37 or newer (`helm template` without a cluster). */ -}}
{{- define "dra-capacity.deviceTaintRuleAPIVersion" -}}
{{- $chosen := .Values.binder.deviceTaintRuleAPIVersion | default "" -}}
{{- if eq $chosen "none" -}}
{{- else if $chosen -}}{{ $chosen }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceTaintRule" -}}resource.k8s.io/v1
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2/DeviceTaintRule" -}}resource.k8s.io/v1beta2
{{- else if semverCompare ">=1.37.0-0" .Capabilities.KubeVersion.Version -}}resource.k8s.io/v1
{{- end -}}
{{- end -}}
