# idmint: one serving node (HTTP, UDP, gRPC + refill workers). Settings come from the environment.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# npm install, not npm ci: the lockfile leaves out optional per-platform builds (msgpackr)
# that npm ci would demand; npm install still honours the lockfile for all it holds.
RUN npm install --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY sql ./sql
COPY src ./src
EXPOSE 8080 8081/udp 8082
USER node
HEALTHCHECK --interval=5s --timeout=2s --retries=10 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "bin/idmint.mjs", "serve"]
