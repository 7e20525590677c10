# groupscope: the Spark Structured Streaming job (groupscope run) and the workload simulator (groupscope simulate).
# Build: docker build -t groupscope .   (docker-compose.yml builds it for the job and the workload containers)
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# PySpark needs a Java runtime (Spark 4 supports 17 and 21); procps gives Spark's scripts `ps`.
# The man directory works around openjdk's post-install script on slim images.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/groupscope
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY streaming ./streaming
RUN pip install .

# Unprivileged user; /data holds the Delta tables and the Spark checkpoint (a volume in docker-compose.yml).
RUN useradd --system --uid 10001 --home-dir /data groupscope \
    && mkdir -p /data /etc/groupscope \
    && chown groupscope /data
COPY docker/groupscope/groupscope.yaml /etc/groupscope/groupscope.yaml
USER groupscope

ENV SPARK_LOCAL_IP=127.0.0.1 \
    GROUPSCOPE_DELTA_PATH=/data/delta \
    GROUPSCOPE_CHECKPOINT=/data/checkpoint
VOLUME ["/data"]
EXPOSE 9308

CMD ["groupscope", "run", "--config", "/etc/groupscope/groupscope.yaml"]
