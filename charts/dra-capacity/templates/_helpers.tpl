{{/* Name of the chart, truncated to the DNS label limit. */}}
{{- define "dra-capacity.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name: <release> when it already contains the chart name, else <release>-<chart>. */}}
{{- define "dra-capacity.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dra-capacity.webhookName" -}}
{{- printf "%s-webhook" (include "dra-capacity.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dra-capacity.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "dra-capacity.webhookName" .)) .Values.tls.secretName -}}
{{- end -}}

{{/* Labels on every object (app.kubernetes.io/*). */}}
{{- define "dra-capacity.labels" -}}
app.kubernetes.io/name: {{ include "dra-capacity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dra-capacity
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of the webhook pods. */}}
{{- define "dra-capacity.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dra-capacity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end -}}

{{/* --feature-gates value, sorted for stable output. */}}
{{- define "dra-capacity.featureGates" -}}
{{- $gates := list -}}
{{- range $k, $v := .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" $k $v) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* Fail early, with a message, on combinations that cannot work. */}}
{{- define "dra-capacity.checks" -}}
{{- if and (eq .Values.tls.mode "secret") (not .Values.tls.caBundle) -}}
{{- fail "tls.mode=secret needs tls.caBundle: the base64 PEM CA that signed the Secret's certificate" -}}
{{- end -}}
{{- if and (eq .Values.tls.mode "secret") (not .Values.tls.secretName) -}}
{{- fail "tls.mode=secret needs tls.secretName: an existing kubernetes.io/tls Secret in the release namespace" -}}
{{- end -}}
{{- end -}}

{{/* Webhook client config, caBundle included in secret mode. */}}
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

{{/* Annotations that let cert-manager's cainjector fill caBundle. */}}
{{- define "dra-capacity.caInjection" -}}
{{- if eq .Values.tls.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "dra-capacity.webhookName" .) }}
{{- end }}
{{- end -}}
