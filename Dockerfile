# scale-agent: one image for the agent, the plugin-server and the CLI (`scale-agent <command>`).
# Build: docker build -t ghcr.io/scale-agent/scale-agent:$(node -p 'require("./package.json").version') .

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY cdk8s ./cdk8s
RUN npm run build

FROM node:24-bookworm-slim
ENV NODE_ENV=production
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
