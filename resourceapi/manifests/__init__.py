"""Reading manifests: documents, the YAML event reader, the field schema, interning."""
