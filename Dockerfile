# scale-agent: one image for the agent, the plugin-server and the CLI (`scale-agent <command>`).
# Build: docker build -t ghcr.io/scale-agent/scale-agent:$(node -p 'require("./package.json").version') .

# BASE_IMAGE: where no registry is reachable, an equivalent base made locally (tools/image/build.sh does that).
ARG BASE_IMAGE=node:24-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY cdk8s ./cdk8s
# npm run build ends by writing oclif.manifest.json, loading the commands it lists.
COPY scripts/oclif-manifest.mjs ./scripts/
RUN npm run build

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
# jemalloc for the agent (its pods set LD_PRELOAD to the link below, and MALLOC_CONF=background_thread:true): with
# glibc's malloc an agent kept ~110 MB freed after its initial sync; with jemalloc 100 accounts × 10k objects
# settle at 99 MB RSS instead of 213 MB (bench/profiles/agent-memory.md). One path for every architecture.
RUN apt-get update \
  && apt-get install -y --no-install-recommends libjemalloc2 \
  && rm -rf /var/lib/apt/lists/* \
  && ln -s "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" /usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /src/dist ./dist
COPY --from=build /src/oclif.manifest.json ./
COPY bin ./bin
COPY schemas ./schemas
COPY proto ./proto
COPY kustomize/base ./kustomize/base
COPY kustomize/components ./kustomize/components
COPY charts ./charts
COPY examples ./examples
# The node image's unprivileged user (uid 1000); the chart and kustomize base run it with runAsNonRoot.
USER 1000:1000
EXPOSE 7002 9091 8082
ENTRYPOINT ["node", "/app/bin/run.js"]
CMD ["--help"]
