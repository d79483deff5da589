# The what-if dashboard in a container: `docker build -t llm-codesign .` then
# `docker run -p 8501:8501 llm-codesign` (or `docker compose up`, compose.yaml).
# Options of `codesign app` (address, port, upload limit, base URL path) are the
# CMD's flags; see docs/dashboard.md, "Deployment".
FROM python:3.11-slim

# Debian's Chromium draws the PNG downloads (kaleido names it; nothing is fetched at
# run time). Leave it out (and lose only the PNG buttons) with --build-arg PNG=0.
ARG PNG=1
RUN if [ "$PNG" = "1" ]; then \
      apt-get update && apt-get install -y --no-install-recommends chromium \
      && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app
COPY . /app
# Editable: the pages read examples/ and data/validation/ from the source tree.
RUN pip install --no-cache-dir -e . \
    && useradd --create-home codesign && chown -R codesign /app
USER codesign

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
CMD ["codesign", "app", "--address", "0.0.0.0", "--port", "8501", "--max-upload-mb", "20"]
