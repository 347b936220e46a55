# Call B (carry .gpu-carry/g2): the second third of the GGUF only.
ls -la .gpu-carry/*/
