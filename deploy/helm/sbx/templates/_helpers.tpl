{{/* Name prefix of every object: the release name, "sbx" appended unless it has it. */}}
{{- define "sbx.fullname" -}}
{{- if contains "sbx" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-sbx" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sbx.labels" -}}
app.kubernetes.io/name: sbx
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: sbx.selector (list . "node") */}}
{{- define "sbx.selector" -}}
app.kubernetes.io/name: sbx
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The sbx image; "latest" and an empty tag are refused. */}}
{{- define "sbx.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if eq $tag "latest" -}}{{ fail "image.tag: pin a version, not latest" }}{{- end -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{- define "sbx.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "sbx.fullname" .)) -}}
{{- end -}}

{{/* An env var from a key of the chart's Secret: sbx.secretEnv (list . "SBX_API_KEY" "api-key") */}}
{{- define "sbx.secretEnv" -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "sbx.secretName" (index . 0) }}
      key: {{ index . 2 }}
{{- end -}}

{{/* The /health probes of an sbx container (node and front answer it unauthenticated). */}}
{{- define "sbx.probes" -}}
startupProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 5
  failureThreshold: 60
readinessProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 5
  failureThreshold: 2
livenessProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
{{- end -}}
