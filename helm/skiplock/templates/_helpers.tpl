{{/* Names and labels: every object's name and labels come from here. */}}

{{- define "skiplock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* `<release>-skiplock`, or the release name alone when it already contains the chart's name. */}}
{{- define "skiplock.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A component's name: `<fullname>-<component>` (api, worker, migrate, test), within 63 characters. */}}
{{- define "skiplock.componentName" -}}
{{- printf "%s-%s" (include "skiplock.fullname" .root | trunc (int (sub 62 (len .component))) | trimSuffix "-") .component }}
{{- end }}

{{- define "skiplock.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "skiplock.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skiplock.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "skiplock.labels" -}}
helm.sh/chart: {{ include "skiplock.chart" . }}
{{ include "skiplock.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: skiplock
{{- end }}

{{/* Labels of one component's objects: call with (dict "root" $ "component" "api"). */}}
{{- define "skiplock.componentLabels" -}}
{{ include "skiplock.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "skiplock.componentSelectorLabels" -}}
{{ include "skiplock.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "skiplock.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "skiplock.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "skiplock.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret holding the database URL, Redis URL, admin password and metrics token. */}}
{{- define "skiplock.secretName" -}}
{{- default (include "skiplock.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The migration hook's Secret: created before the release's own objects exist (see migration-job.yaml). */}}
{{- define "skiplock.migrationSecretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- include "skiplock.componentName" (dict "root" . "component" "migrate") }}
{{- end }}
{{- end }}

{{/* The Secret holding the key that signs bearer tokens (SKIPLOCK_TOKEN_SECRET): yours, or the chart's
(tokens-secret.yaml), which is generated once and then looked up on every upgrade. */}}
{{- define "skiplock.tokenSecretName" -}}
{{- .Values.auth.tokenSecret.existingSecret | default (include "skiplock.componentName" (dict "root" . "component" "tokens")) }}
{{- end }}

{{/* SKIPLOCK_TOKEN_SECRET, for the API container only (the worker, the migration and the test pod issue no
tokens). */}}
{{- define "skiplock.tokenSecretEnv" -}}
- name: SKIPLOCK_TOKEN_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "skiplock.tokenSecretName" . }}
      key: {{ .Values.auth.tokenSecret.key }}
{{- end }}

{{- define "skiplock.apiReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ .Values.autoscaling.minReplicas }}{{ else }}{{ .Values.api.replicaCount }}{{ end }}
{{- end }}

{{/* Secrets as environment variables: call with (dict "root" $ "secretName" name "names" (list "databaseUrl" ...)).
The metrics token is optional: absent from the chart's Secret when not given. */}}
{{- define "skiplock.secretEnv" -}}
{{- $keys := .root.Values.secrets.keys }}
{{- $vars := dict "databaseUrl" "SKIPLOCK_DATABASE_URL" "redisUrl" "SKIPLOCK_REDIS_URL" "adminPassword" "SKIPLOCK_ADMIN_PASSWORD" "metricsToken" "SKIPLOCK_METRICS_TOKEN" }}
{{- range .names }}
{{- if or (ne . "metricsToken") $.root.Values.secrets.existingSecret $.root.Values.secrets.metricsToken }}
- name: {{ get $vars . }}
  valueFrom:
    secretKeyRef:
      name: {{ $.secretName }}
      key: {{ get $keys . }}
      {{- if eq . "metricsToken" }}
      optional: true
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The image, security context and environment shared by every Skiplock container. */}}
{{- define "skiplock.containerBase" -}}
image: {{ include "skiplock.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end }}

{{/* Volumes every Skiplock pod mounts: a small /tmp, the one writable place with a read-only root. */}}
{{- define "skiplock.tmpVolume" -}}
- name: tmp
  emptyDir: {sizeLimit: 64Mi}
{{- end }}

{{- define "skiplock.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{- define "skiplock.podSpecBase" -}}
serviceAccountName: {{ include "skiplock.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/* Fails the render with a message naming the value to set. */}}
{{- define "skiplock.validate" -}}
{{- if not .Values.secrets.existingSecret }}
{{- if not .Values.secrets.databaseUrl }}{{ fail "set secrets.databaseUrl (postgresql://...) or secrets.existingSecret" }}{{ end }}
{{- if not .Values.secrets.redisUrl }}{{ fail "set secrets.redisUrl (redis://...) or secrets.existingSecret" }}{{ end }}
{{- if not .Values.secrets.adminPassword }}{{ fail "set secrets.adminPassword (the platform admin's) or secrets.existingSecret" }}{{ end }}
{{- end }}
{{- if and .Values.grpc.enabled (eq (int .Values.grpc.port) (int .Values.api.port)) }}
{{- fail "grpc.port must differ from api.port (HTTP and gRPC are two listeners)" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not (or .Values.secrets.existingSecret .Values.secrets.metricsToken .Values.config.metrics_public)) }}
{{- fail "metrics.serviceMonitor needs secrets.metricsToken (or config.metrics_public: true)" }}
{{- end }}
{{- end }}
