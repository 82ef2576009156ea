{
  "targets": [
    {
      "target_name": "tbucket_io",
      "sources": ["native/tbucket_io.c"],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
