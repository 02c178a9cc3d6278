# Image of one of the example operators: a static binary on distroless, run
# as a non-root user. `make docker-build IMG=... OPERATOR=./examples/<name>`
# builds it; by hand:
#
#   docker build --build-arg EXAMPLE=minimal -t gopf-minimal:latest .
#
# test/deploy builds the binary with the same command and checks that it is
# static and starts.

# Build stage: the Go toolchain.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# Which operator under examples/ to build.
ARG EXAMPLE=minimal

WORKDIR /workspace
# Modules first, so that this layer is reused while only the code changes.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# CGO_ENABLED=0: a static binary that needs no libc on the runtime image.
# TARGETOS and TARGETARCH are set by `docker buildx --platform`; without
# them the binary is for the builder's own platform.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager ./examples/${EXAMPLE}

# Runtime stage: no shell, no package manager, CA certificates and a
# non-root user (65532) only.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
