# MariaDB for the real node's MySQL installs: Debian's mariadb-server (the package the host-process tests run),
# built by tools/image/build.sh on the same locally made Debian base as the project's image, since no registry
# is reachable to pull the public mariadb image. Pods give it a data volume and their own start command.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
  && apt-get install -y --no-install-recommends mariadb-server \
  && rm -rf /var/lib/apt/lists/* /var/lib/mysql/*
EXPOSE 3306
ENTRYPOINT ["mariadbd"]
