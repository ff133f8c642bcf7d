/** The text a new DAG starts from: a small pipeline that shows the main fields. */
export const exampleDag = `name: my-pipeline
description: "an example: extract, then load in two parts"
params:
  day: $[yyyyMMdd-1]
tasks:
  - name: extract
    type: shell
    script: |
      echo "extracting \${day}"
      echo '\${setValue(rows=42)}'
    outputs: [rows]
  - name: load-a
    type: shell
    upstream: [extract]
    retries: 1
    script: echo "loading \${rows} rows into a"
  - name: load-b
    type: shell
    upstream: [extract]
    script: echo "loading \${rows} rows into b"
`
