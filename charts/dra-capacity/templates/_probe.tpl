{{/* The probe container and its volumes, shared by the post-install Job and the helm test Pod.
Call with (dict "root" $ "timeout" seconds). */}}
{{- define "dra-capacity.probePodSpec" -}}
{{- $root := .root -}}
restartPolicy: Never
automountServiceAccountToken: false
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: probe
    image: {{ include "dra-capacity.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    command: ["/opt/dra-capacity/bin/python", "/probe/probe.py"]
    env:
      - name: WEBHOOK_URL
        value: "https://{{ include "dra-capacity.webhookName" $root }}.{{ $root.Release.Namespace }}.svc:{{ $root.Values.webhook.servicePort }}/validate"
      - name: PROBE_TIMEOUT
        value: {{ .timeout | quote }}
      - name: HINT
        value: "Look at: kubectl -n {{ $root.Release.Namespace }} get pods -l app.kubernetes.io/instance={{ $root.Release.Name }},app.kubernetes.io/component=webhook; kubectl -n {{ $root.Release.Namespace }} logs deploy/{{ include "dra-capacity.webhookName" $root }} --all-containers"
      {{- if eq $root.Values.tls.mode "secret" }}
      - name: CA_BUNDLE
        value: {{ $root.Values.tls.caBundle | quote }}
      {{- end }}
    securityContext:
      {{- toYaml $root.Values.securityContext | nindent 6 }}
    resources:
      {{- toYaml $root.Values.hooks.resources | nindent 6 }}
    volumeMounts:
      - name: probe
        mountPath: /probe
        readOnly: true
      {{- if ne $root.Values.tls.mode "secret" }}
      - name: ca
        mountPath: /probe-ca
        readOnly: true
      {{- end }}
volumes:
  - name: probe
    configMap:
      name: {{ include "dra-capacity.componentName" (list $root "probe") }}
  {{- if ne $root.Values.tls.mode "secret" }}
  # The CA only (the Secret exists once the certificate controller or cert-manager made it; the kubelet
  # retries the mount until then).
  - name: ca
    secret:
      secretName: {{ include "dra-capacity.tlsSecretName" $root }}
      items:
        - key: ca.crt
          path: ca.crt
  {{- end }}
{{- end -}}
