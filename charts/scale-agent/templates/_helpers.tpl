{{/*
Names follow the cert-manager/argo-helm convention, so two releases in one namespace never share an object or a
selector: the release's fullname prefixes every object, and the instance label defaults to the release name.
*/}}

{{/* scale-agent.name: the chart's name (`nameOverride`), the `app.kubernetes.io/name` label. */}}
{{- define "scale-agent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
scale-agent.fullname: the prefix of every object name: `fullnameOverride`, else the release name when it already
contains the chart's name (release `scale-agent` keeps the names kustomize/base uses), else `<release>-<name>`.
*/}}
{{- define "scale-agent.fullname" -}}
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

{{/*
scale-agent.componentName: an object name of one component, `<fullname>-<component>[-<suffix>]`, within the 63
characters a label value (and so a Service name) allows. The fullname is what gets cut, never the component part, so
a long release name cannot make two objects of one release the same name.
Call with (dict "context" $ "component" "plugin-server" "suffix" "config").
*/}}
{{- define "scale-agent.componentName" -}}
{{- $parts := list .component }}
{{- with .suffix }}{{ $parts = append $parts . }}{{ end }}
{{- $rest := join "-" $parts }}
{{- $prefix := include "scale-agent.fullname" .context | trunc (int (sub 62 (len $rest))) | trimSuffix "-" }}
{{- printf "%s-%s" $prefix $rest }}
{{- end }}

{{/* scale-agent.pluginServerName: the plugin-server's Deployment, ServiceAccount and REST Service. Call with $. */}}
{{- define "scale-agent.pluginServerName" -}}
{{- include "scale-agent.componentName" (dict "context" . "component" "plugin-server") }}
{{- end }}

{{/* scale-agent.agentName: the agent group's Deployment and ServiceAccount (`-<group>` as the Kustomize overlays). Call with $. */}}
{{- define "scale-agent.agentName" -}}
{{- include "scale-agent.componentName" (dict "context" . "component" "agent" "suffix" .Values.agent.group) }}
{{- end }}

{{/*
scale-agent.serviceAccountName: the pods' ServiceAccount: `serviceAccount.name`, else the component's object name when
the chart creates it, else `default` (cert-manager's convention). Call with (dict "sa" .Values.x.serviceAccount "name" $name).
*/}}
{{- define "scale-agent.serviceAccountName" -}}
{{- $sa := .sa | default dict }}
{{- if ne $sa.create false }}
{{- $sa.name | default .name }}
{{- else }}
{{- $sa.name | default "default" }}
{{- end }}
{{- end }}

{{/* scale-agent.instance: the `app.kubernetes.io/instance` label: the component's `instance` value, else the release name. Call with (dict "context" $ "instance" "..."). */}}
{{- define "scale-agent.instance" -}}
{{- .instance | default .context.Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
scale-agent.labels: labels of every object. Call with (dict "context" $ "component" "agent" "instance" "x").
Selectors use only name, component and instance, so upgrades never change them.
*/}}
{{- define "scale-agent.labels" -}}
{{ include "scale-agent.selectorLabels" . }}
app.kubernetes.io/part-of: scale-agent
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .context.Chart.Name .context.Chart.Version | replace "+" "_" }}
{{- end }}

{{/* scale-agent.selectorLabels: the labels of selectors. Call with (dict "context" $ "component" "agent" "instance" "x"). */}}
{{- define "scale-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scale-agent.name" .context }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ include "scale-agent.instance" . | quote }}
{{- end }}

{{/* scale-agent.image: a component's image, else repository:tag (tag defaults to appVersion). Call with (dict "context" $ "image" .Values.agent.image). */}}
{{- define "scale-agent.image" -}}
{{- if .image -}}
{{ .image }}
{{- else -}}
{{ .context.Values.image.repository }}:{{ .context.Values.image.tag | default .context.Chart.AppVersion }}
{{- end -}}
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

{{/*
scale-agent.keySecret: an Opaque Secret of one key holding `values.value`; without one, the value the release's Secret
already holds (read back with lookup, so upgrades keep it), else a new random one: 32 bytes as base64 (`generate`
"key", an AES-256 key) or 64 letters and digits ("word"). A Secret the chart generated is kept on uninstall: what it
sealed (dynamic accounts in MySQL) outlives the release.
Call with (dict "context" $ "values" .Values.pluginServer.peerSecret "name" "..." "labels" "..." "generate" "key|word").
*/}}
{{- define "scale-agent.keySecret" -}}
{{- $v := .values }}
{{- $value := $v.value }}
{{- if not $value }}
{{- $existing := lookup "v1" "Secret" .context.Release.Namespace .name }}
{{- with $existing }}
{{- with index (.data | default dict) $v.secretKey }}{{ $value = b64dec . }}{{ end }}
{{- end }}
{{- end }}
{{- if not $value }}
{{- $value = eq .generate "key" | ternary (randBytes 32) (randAlphaNum 64) }}
{{- end }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .name }}
  labels:
    {{- .labels | nindent 4 }}
  {{- if not $v.value }}
  annotations:
    helm.sh/resource-policy: keep
  {{- end }}
type: Opaque
stringData:
  {{ $v.secretKey }}: {{ $value | quote }}
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

{{/*
scale-agent.podScheduling: a component's scheduling keys, with the default spread: replicas on one node or in one zone
fail together, so more than one spreads over nodes, then zones, softly (ScheduleAnyway, so a one-node cluster still
runs them all), unless topologySpreadConstraints is set (`[]`: none). The compiler's model makes the same choice
(src/compiler/pod-scheduling.ts) and writes it into synthesized values.
Call with (dict "values" .Values.agent "selector" $selectorYaml).
*/}}
{{- define "scale-agent.podScheduling" -}}
{{- $v := .values }}
{{- $scheduling := pick $v "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "priorityClassName" }}
{{- if and (gt (int $v.replicas) 1) (not (hasKey $v "topologySpreadConstraints")) }}
{{- $spread := list }}
{{- range $key := list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
{{- $spread = append $spread (dict "maxSkew" 1 "topologyKey" $key "whenUnsatisfiable" "ScheduleAnyway" "labelSelector" (dict "matchLabels" ($.selector | fromYaml))) }}
{{- end }}
{{- $_ := set $scheduling "topologySpreadConstraints" $spread }}
{{- end }}
{{- include "scale-agent.scheduling" $scheduling }}
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
