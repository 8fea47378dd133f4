# idmint: one serving node (HTTP, UDP, gRPC + refill workers). Settings come from the environment.

# Build stage: every dependency (TypeScript included); `npm pack` builds dist/ (its prepack
# step is `npm run build`) and packs exactly what package.json's `files` ships, which is
# unpacked into /pkg for the runtime stage.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# npm install, not npm ci: the lockfile leaves out optional per-platform builds (msgpackr)
# that npm ci would demand; npm install still honours the lockfile for all it holds.
RUN npm install --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp && mkdir /pkg && tar -xzf /tmp/idmint-*.tgz -C /pkg --strip-components=1

# Runtime stage: production dependencies only and the packed files (dist/, sql/, ...), run
# with plain node. (The lockfile keeps `typescript` as an optional peer of a dependency of
# Bull Board, so --omit=dev still installs it; nothing loads it. tsx is not installed.)
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /pkg ./
EXPOSE 8080 8081/udp 8082
USER node
HEALTHCHECK --interval=5s --timeout=2s --retries=10 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "--single-threaded-gc", "dist/cli.js", "serve"]
