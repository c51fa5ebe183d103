# Tollgate: the compiled build on Node 20, run as the unprivileged `node` user.
#   docker build -t tollgate .
#   docker run -p 127.0.0.1:8402-8405:8402-8405 -e ALLOW_DEV_IDENTITY=1 -v tollgate-data:/data tollgate
# (HOST=0.0.0.0 here: without IDENTITY_JWKS_URL serve refuses to start unless ALLOW_DEV_IDENTITY=1, which is
# safe only with the ports published on loopback as above; docs/configuration.md.)
# compose.yaml runs it with PostgreSQL 15; README "How it scales" lists what to set in production.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY templates/paid-server/package.json templates/paid-server/
# The `tollgate` bin's workspace (its package.json and the two-line bin): npm links it into node_modules/.bin.
COPY packages/cli packages/cli
# All dependencies to build (Vite builds the web pages), then only the production ones are kept.
RUN npm ci --no-audit --no-fund
COPY bin bin
COPY src src
COPY web web
RUN node bin/build.js && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
# What /health reports (there is no git in the image): docker build --build-arg BUILD_COMMIT=$(git rev-parse HEAD)
ARG BUILD_COMMIT=unknown
ARG BUILD_BRANCH=unknown
ENV NODE_ENV=production \
    BUILD_COMMIT=$BUILD_COMMIT \
    BUILD_BRANCH=$BUILD_BRANCH \
    HOST=0.0.0.0 \
    TOLLGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/web/dist web/dist
COPY package.json ./
COPY bin bin
# node_modules/.bin/tollgate points here: `docker exec … npx tollgate status` runs bin/tollgate.js at once.
COPY packages/cli packages/cli
COPY migrations migrations
COPY contracts/USDG.json contracts/Multicall3.json contracts/x402-contracts.json contracts/
# No src/ in the image: bin/tollgate.js then runs dist/ as built above, never rebuilding.
RUN mkdir /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8402 8403 8404 8405 8406
# /ready of whichever listener this container's roles run (an api, facilitator, relay or assets origin, or a
# worker-only node's WORKER_PORT), found in the instance record in the data dir: bin/healthcheck.js.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s CMD ["node", "bin/healthcheck.js"]
ENTRYPOINT ["node", "bin/tollgate.js"]
CMD ["serve"]
