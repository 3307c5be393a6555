{{/* The app's name: the chart's, or nameOverride. Used in app.kubernetes.io/name. */}}
{{- define "memcached-hook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of the hook's objects: fullnameOverride, else the release name when it contains the app's
name (`helm install memcached-hook ...` gives the names of deploy/), else <release>-<name>.
*/}}
{{- define "memcached-hook.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "memcached-hook.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The hook's ServiceAccount: the chart's own, or serviceAccount.name (default: "default"). */}}
{{- define "memcached-hook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "memcached-hook.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The two labels the hook's selectors use; fixed per install, because Deployment selectors are immutable. */}}
{{- define "memcached-hook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memcached-hook.name" . }}
app.kubernetes.io/component: sync-hook
{{- end -}}

{{/* Labels of every object: the ones deploy/ sets, plus Helm's and commonLabels. */}}
{{- define "memcached-hook.labels" -}}
{{ include "memcached-hook.selectorLabels" . }}
app.kubernetes.io/part-of: memcached-hook
{{ include "memcached-hook.helmLabels" . }}
{{- end -}}

{{/* Labels of the cluster-wide objects (CompositeController, RBAC), as in metacontroller/. */}}
{{- define "memcached-hook.clusterLabels" -}}
app.kubernetes.io/name: {{ include "memcached-hook.name" . }}
app.kubernetes.io/part-of: memcached-hook
{{ include "memcached-hook.helmLabels" . }}
{{- end -}}

{{- define "memcached-hook.helmLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "memcached-hook.image" -}}
{{- $image := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- if .Values.image.digest -}}
{{- $image = printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- end -}}
{{- include "memcached-hook.mirrored" (dict "image" $image "Values" .Values) -}}
{{- end -}}

{{/*
`image` from global.imageRegistry when that is set: an image whose first path part is a registry
(it has a dot or a colon, or is localhost) has that part replaced, any other (Docker Hub) gets the
registry in front. Called with (dict "image" IMAGE "Values" .Values).
*/}}
{{- define "memcached-hook.mirrored" -}}
{{- $registry := trimSuffix "/" (default "" (.Values.global).imageRegistry) -}}
{{- if $registry -}}
{{- $parts := splitList "/" .image -}}
{{- $first := first $parts -}}
{{- $path := .image -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $path = join "/" (rest $parts) -}}
{{- end -}}
{{- printf "%s/%s" $registry $path -}}
{{- else -}}
{{- .image -}}
{{- end -}}
{{- end -}}

{{/* http or https, from tls.enabled. */}}
{{- define "memcached-hook.scheme" -}}
{{ ternary "https" "http" .Values.tls.enabled }}
{{- end -}}

{{/* Base URL of the hook as Metacontroller calls it. */}}
{{- define "memcached-hook.url" -}}
{{ include "memcached-hook.scheme" . }}://{{ include "memcached-hook.fullname" . }}.{{ .Release.Namespace }}.svc:8080
{{- end -}}

{{/* The hook's Service as a webhook names it; Metacontroller calls
<protocol>://<fullname>.<namespace>:8080<path> (no .svc: the DNS search path of its pod). */}}
{{- define "memcached-hook.webhookService" -}}
service:
  name: {{ include "memcached-hook.fullname" . }}
  namespace: {{ .Release.Namespace }}
  port: 8080
  protocol: {{ include "memcached-hook.scheme" . }}
{{- end -}}

{{/* The CA bundle and the bearer token of a webhook, when TLS / auth are on. */}}
{{- define "memcached-hook.webhookSecurity" -}}
{{- if .Values.tls.enabled }}
caBundle:
  secretRef:
    name: {{ .Values.tls.secretName }}
    namespace: {{ .Release.Namespace }}
    key: ca.crt
{{- end }}
{{- if .Values.auth.enabled }}
authorization:
  type: Bearer
  secretRef:
    name: {{ .Values.auth.secretName }}
    namespace: {{ .Release.Namespace }}
    key: token
{{- end }}
{{- end -}}
