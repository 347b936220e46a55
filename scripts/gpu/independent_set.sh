# Sourced: the independent set (speculator/eval/) as plugin_load.sh and profile_step.sh serve it:
# the voice conversations with their tools, answers cut at VOICE_TOKENS; the generic prompts
# without tools, GENERIC_TOKENS. The caller defines `ts` (turnspec) and M (the model folder).
VOICE_TOKENS=96 GENERIC_TOKENS=160
# render_ids voice|generic OUT: every turn's prompt ids as turnspec's server renders them, for
# SGLang's own /generate (the voice turns' structural tags beside them)
render_ids() {
  case $1 in
    voice) ts workload render --out "$2" --workload speculator/eval/voice.jsonl \
             --conversations 82 --max-tokens "$VOICE_TOKENS" --model "$M" ;;
    generic) ts workload render --out "$2" --workload speculator/eval/generic.jsonl \
               --conversations 119 --max-tokens "$GENERIC_TOKENS" --model "$M" --no-tools ;;
    *) echo "render_ids $1: expected voice or generic" >&2; return 2 ;;
  esac
}
