{{/* The release's full name: the release name, with "kubeplug" appended unless it has it. */}}
{{- define "kubeplug.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kubeplug.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kubeplug.labels" -}}
{{ include "kubeplug.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kubeplug.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kubeplug.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kubeplug.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
GOMEMLIMIT: goMemLimitPercent of resources.limits.memory, in MiB. The limit
must be a whole number of Mi or Gi.
*/}}
{{- define "kubeplug.goMemLimit" -}}
{{- $mem := required "resources.limits.memory is required: GOMEMLIMIT is derived from it" .Values.resources.limits.memory | toString -}}
{{- $mib := 0 -}}
{{- if regexMatch "^[0-9]+Mi$" $mem -}}
{{- $mib = trimSuffix "Mi" $mem | atoi -}}
{{- else if regexMatch "^[0-9]+Gi$" $mem -}}
{{- $mib = mul (trimSuffix "Gi" $mem | atoi) 1024 -}}
{{- else -}}
{{- fail (printf "resources.limits.memory %q: write it in Mi or Gi (512Mi, 2Gi) so that GOMEMLIMIT can be derived from it" $mem) -}}
{{- end -}}
{{- $pct := int .Values.goMemLimitPercent -}}
{{- if or (lt $pct 10) (gt $pct 100) -}}
{{- fail (printf "goMemLimitPercent %d: must be between 10 and 100" $pct) -}}
{{- end -}}
{{- printf "%dMiB" (div (mul $mib $pct) 100) -}}
{{- end -}}

{{/* The webhook's Service and TLS Secret names. */}}
{{- define "kubeplug.webhookService" -}}
{{- printf "%s-webhook" (include "kubeplug.fullname" .) -}}
{{- end -}}
{{- define "kubeplug.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "kubeplug.fullname" .) -}}
{{- end -}}
