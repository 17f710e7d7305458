{{/*
scale-agent.labels: labels of every object. Call with (dict "context" $ "component" "agent" "instance" "x").
Selectors use only name, component and instance, so upgrades never change them.
*/}}
{{- define "scale-agent.labels" -}}
app.kubernetes.io/name: scale-agent
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: scale-agent
app.kubernetes.io/instance: {{ .instance | quote }}
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .context.Chart.Name .context.Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "scale-agent.selectorLabels" -}}
app.kubernetes.io/name: scale-agent
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ .instance | quote }}
{{- end }}

{{/* scale-agent.image: a component's image, else repository:tag (tag defaults to appVersion). Call with (dict "context" $ "image" .Values.agent.image). */}}
{{- define "scale-agent.image" -}}
{{- if .image -}}
{{ .image }}
{{- else -}}
{{ .context.Values.image.repository }}:{{ .context.Values.image.tag | default .context.Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* scale-agent.agentName: object name of the agent group (the same as the Kustomize overlays give it). */}}
{{- define "scale-agent.agentName" -}}
scale-agent-agent-{{ .Values.agent.group }}
{{- end }}

{{/* scale-agent.lbAnnotations: provider annotations of an L4 load balancer. Call with .Values.pluginServer.grpcService.loadBalancer. */}}
{{- define "scale-agent.lbAnnotations" -}}
{{- $internal := .internal -}}
{{- if eq .provider "aws" }}
service.beta.kubernetes.io/aws-load-balancer-type: external
service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip
service.beta.kubernetes.io/aws-load-balancer-scheme: {{ ternary "internal" "internet-facing" $internal }}
{{- else if and (eq .provider "gcp") $internal }}
networking.gke.io/load-balancer-type: Internal
{{- else if and (eq .provider "azure") $internal }}
service.beta.kubernetes.io/azure-load-balancer-internal: "true"
{{- end }}
{{- range $k, $v := .annotations }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}

{{/* scale-agent.tls: a kubernetes.io/tls Secret or a cert-manager Certificate. Call with (dict "context" $ "tls" .Values.x.tls "name" "..." "secretName" "..." "usage" "server|client" "labels" "..."). */}}
{{- define "scale-agent.tls" -}}
{{- if eq .tls.source "secret" }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .secretName }}
  labels:
    {{- .labels | nindent 4 }}
{{- if and .tls.secret.cert .tls.secret.key }}
type: kubernetes.io/tls
{{- else }}
type: Opaque
{{- end }}
stringData:
  ca.crt: {{ required "tls.secret.caCert is required when tls.source is secret" .tls.secret.caCert | quote }}
  {{- if and .tls.secret.cert .tls.secret.key }}
  tls.crt: {{ .tls.secret.cert | quote }}
  tls.key: {{ .tls.secret.key | quote }}
  {{- end }}
{{- else if eq .tls.source "cert-manager" }}
{{- $cm := .tls.certManager }}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ .name }}
  labels:
    {{- .labels | nindent 4 }}
spec:
  secretName: {{ .secretName }}
  commonName: {{ $cm.commonName | quote }}
  {{- with $cm.dnsNames }}
  dnsNames:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $cm.uris }}
  uris:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  duration: {{ $cm.duration | default "2160h" }}
  privateKey:
    algorithm: ECDSA
    size: 256
    rotationPolicy: Always
    encoding: PKCS8
  usages:
    - digital signature
    - {{ ternary "server auth" "client auth" (eq .usage "server") }}
  issuerRef:
    {{- toYaml (required "tls.certManager.issuerRef is required when tls.source is cert-manager" $cm.issuerRef) | nindent 4 }}
{{- end }}
{{- end }}

{{/* scale-agent.podSecurity: the restricted Pod Security Standard, shared by both workloads. */}}
{{- define "scale-agent.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "scale-agent.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* scale-agent.scheduling: a component's pod scheduling keys (nodeSelector, tolerations, affinity, topologySpreadConstraints, priorityClassName). Call with the component's values. */}}
{{- define "scale-agent.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}
