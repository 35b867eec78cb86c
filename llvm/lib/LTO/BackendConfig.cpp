//===- BackendConfig.cpp - The LTO configuration sent to dtlto-backend ----===//

#include "dtlto/BackendConfig.h"
#include "dtlto/WriteFile.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/LTO/Config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <type_traits>

using namespace llvm;

namespace dtlto {

static constexpr StringLiteral Format = "dtlto-backend-config-1";

// Every field that decides what the backend produces, by kind. Enums travel
// as integers: both ends run the same LLVM version, which is checked.
#define DTLTO_BOOL_FIELDS(X)                                                   \
  X(VerifyEach)                                                                \
  X(DisableVerify)                                                             \
  X(Freestanding)                                                              \
  X(CodeGenOnly)                                                               \
  X(RunCSIRInstr)                                                              \
  X(PGOWarnMismatch)                                                           \
  X(HasWholeProgramVisibility)                                                 \
  X(ValidateAllVtablesHaveTypeInfos)                                           \
  X(AllVtablesHaveTypeInfos)                                                   \
  X(ShouldDiscardValueNames)                                                   \
  X(AddFSDiscriminator)                                                        \
  X(DebugPassManager)                                                          \
  X(PTO.LoopInterleaving)                                                      \
  X(PTO.LoopVectorization)                                                     \
  X(PTO.SLPVectorization)                                                      \
  X(PTO.LoopUnrolling)                                                         \
  X(PTO.LoopInterchange)                                                       \
  X(PTO.LoopFusion)                                                            \
  X(PTO.ForgetAllSCEVInLoopUnroll)                                             \
  X(PTO.CallGraphProfile)                                                      \
  X(PTO.UnifiedLTO)                                                            \
  X(PTO.MergeFunctions)                                                        \
  X(PTO.EagerlyInvalidateAnalyses)                                             \
  X(Options.NoInfsFPMath)                                                      \
  X(Options.NoNaNsFPMath)                                                      \
  X(Options.NoTrappingFPMath)                                                  \
  X(Options.NoSignedZerosFPMath)                                               \
  X(Options.EnableAIXExtendedAltivecABI)                                       \
  X(Options.HonorSignDependentRoundingFPMathOption)                            \
  X(Options.NoZerosInBSS)                                                      \
  X(Options.GuaranteedTailCallOpt)                                             \
  X(Options.StackSymbolOrdering)                                               \
  X(Options.EnableFastISel)                                                    \
  X(Options.EnableGlobalISel)                                                  \
  X(Options.UseInitArray)                                                      \
  X(Options.DisableIntegratedAS)                                               \
  X(Options.FunctionSections)                                                  \
  X(Options.DataSections)                                                      \
  X(Options.IgnoreXCOFFVisibility)                                             \
  X(Options.XCOFFTracebackTable)                                               \
  X(Options.UniqueSectionNames)                                                \
  X(Options.UniqueBasicBlockSectionNames)                                      \
  X(Options.SeparateNamedSections)                                             \
  X(Options.TrapUnreachable)                                                   \
  X(Options.NoTrapAfterNoreturn)                                               \
  X(Options.EmulatedTLS)                                                       \
  X(Options.EnableTLSDESC)                                                     \
  X(Options.EnableIPRA)                                                        \
  X(Options.EmitStackSizeSection)                                              \
  X(Options.EnableMachineOutliner)                                             \
  X(Options.EnableMachineFunctionSplitter)                                     \
  X(Options.EnableStaticDataPartitioning)                                      \
  X(Options.SupportsDefaultOutlining)                                          \
  X(Options.EmitAddrsig)                                                       \
  X(Options.BBAddrMap)                                                         \
  X(Options.EmitCallGraphSection)                                              \
  X(Options.EmitCallSiteInfo)                                                  \
  X(Options.SupportsDebugEntryValues)                                          \
  X(Options.EnableDebugEntryValues)                                            \
  X(Options.ValueTrackingVariableLocations)                                    \
  X(Options.ForceDwarfFrameSection)                                            \
  X(Options.XRayFunctionIndex)                                                 \
  X(Options.DebugStrictDwarf)                                                  \
  X(Options.Hotpatch)                                                          \
  X(Options.PPCGenScalarMASSEntries)                                           \
  X(Options.JMCInstrument)                                                     \
  X(Options.EnableCFIFixup)                                                    \
  X(Options.MisExpect)                                                         \
  X(Options.XCOFFReadOnlyPointers)                                             \
  X(Options.VerifyArgABICompliance)                                            \
  X(Options.MCOptions.MCRelaxAll)                                              \
  X(Options.MCOptions.MCNoExecStack)                                           \
  X(Options.MCOptions.MCIncrementalLinkerCompatible)                           \
  X(Options.MCOptions.FDPIC)                                                   \
  X(Options.MCOptions.Dwarf64)                                                 \
  X(Options.MCOptions.Crel)                                                    \
  X(Options.MCOptions.ImplicitMapSyms)                                         \
  X(Options.MCOptions.X86RelaxRelocations)                                     \
  X(Options.MCOptions.X86Sse2Avx)                                              \
  X(Options.MCOptions.EmitCompactUnwindNonCanonical)                           \
  X(Options.MCOptions.EmitSFrameUnwind)                                        \
  X(Options.MCOptions.PPCUseFullRegisterNames)

#define DTLTO_INT_FIELDS(X)                                                    \
  X(OptLevel)                                                                  \
  X(CGOptLevel)                                                                \
  X(CGFileType)                                                                \
  X(VisibilityScheme)                                                          \
  X(PTO.LicmMssaOptCap)                                                        \
  X(PTO.LicmMssaNoAccForPromotionCap)                                          \
  X(PTO.InlinerThreshold)                                                      \
  X(Options.GlobalISelAbort)                                                   \
  X(Options.BBSections)                                                        \
  X(Options.LoopAlignment)                                                     \
  X(Options.FloatABIType)                                                      \
  X(Options.AllowFPOpFusion)                                                   \
  X(Options.ThreadModel)                                                       \
  X(Options.EABIVersion)                                                       \
  X(Options.DebuggerTuning)                                                    \
  X(Options.VecLib)                                                            \
  X(Options.ExceptionModel)                                                    \
  X(Options.MCOptions.EmitDwarfUnwind)                                         \
  X(Options.MCOptions.DwarfVersion)                                            \
  X(Options.MCOptions.MCUseDwarfDirectory)                                     \
  X(Options.MCOptions.CompressDebugSections)

#define DTLTO_STRING_FIELDS(X)                                                 \
  X(CPU)                                                                       \
  X(OptPipeline)                                                               \
  X(AAPipeline)                                                                \
  X(OverrideTriple)                                                            \
  X(DefaultTriple)                                                             \
  X(CSIRProfile)                                                               \
  X(SampleProfile)                                                             \
  X(ProfileRemapping)                                                          \
  X(Options.MCOptions.ABIName)

#define DTLTO_STRINGS_FIELDS(X) X(MAttrs)

#define DTLTO_OPTIONAL_INT_FIELDS(X)                                           \
  X(RelocModel)                                                                \
  X(CodeModel)

static json::Array toJSON(ArrayRef<std::string> Strings) {
  json::Array A;
  for (const std::string &S : Strings)
    A.push_back(S);
  return A;
}

Expected<std::string> backendConfigText(const lto::Config &C,
                                        ArrayRef<std::string> MllvmArgs) {
  // What a worker cannot reproduce: files written next to the linker, code
  // loaded into it. Refuse rather than produce something else.
  const char *Unsupported = !C.DwoDir.empty()              ? "--dwo-dir"
                            : !C.PassPlugins.empty()       ? "pass plugins"
                            : !C.RemarksFilename.empty()   ? "optimization remarks"
                            : !C.StatsFile.empty()         ? "--stats-file"
                                                           : nullptr;
  if (Unsupported)
    return createStringError(inconvertibleErrorCode(),
                             Twine("dtlto-backend cannot run jobs with ") +
                                 Unsupported +
                                 "; use clang as the remote compiler, or "
                                 "in-process ThinLTO");
  json::Object Fields;
#define WRITE_BOOL(F) Fields[#F] = bool(C.F);
#define WRITE_INT(F) Fields[#F] = int64_t(C.F);
#define WRITE_STRING(F) Fields[#F] = C.F;
#define WRITE_STRINGS(F) Fields[#F] = toJSON(C.F);
#define WRITE_OPTIONAL_INT(F)                                                  \
  Fields[#F] = C.F ? json::Value(int64_t(*C.F)) : json::Value(nullptr);
  DTLTO_BOOL_FIELDS(WRITE_BOOL)
  DTLTO_INT_FIELDS(WRITE_INT)
  DTLTO_STRING_FIELDS(WRITE_STRING)
  DTLTO_STRINGS_FIELDS(WRITE_STRINGS)
  DTLTO_OPTIONAL_INT_FIELDS(WRITE_OPTIONAL_INT)

  json::Object Root{{"format", Format},
                    {"llvm_version", LLVM_VERSION_STRING},
                    {"mllvm", toJSON(MllvmArgs)},
                    {"fields", std::move(Fields)}};
  return formatv("{0:1}", json::Value(std::move(Root))).str() + "\n";
}

Error writeBackendConfig(StringRef Path, const lto::Config &C,
                         ArrayRef<std::string> MllvmArgs) {
  Expected<std::string> Text = backendConfigText(C, MllvmArgs);
  if (!Text)
    return Text.takeError();
  return writeFile(Path, "dtlto-backend configuration",
                   [&](raw_ostream &OS) { OS << *Text; });
}

namespace {
/// Reads fields, remembering the first problem.
struct FieldReader {
  const json::Object &Fields;
  std::string Problem;

  const json::Value *get(StringRef Name) {
    const json::Value *V = Fields.get(Name);
    if (!V && Problem.empty())
      Problem = "the field '" + Name.str() + "' is missing";
    return V;
  }
  void wrongType(StringRef Name, StringRef Want) {
    if (Problem.empty())
      Problem = "the field '" + Name.str() + "' is not " + Want.str();
  }
  template <typename T> void readBool(StringRef Name, T &&Set) {
    if (const json::Value *V = get(Name)) {
      if (std::optional<bool> B = V->getAsBoolean())
        Set(*B);
      else
        wrongType(Name, "a boolean");
    }
  }
  template <typename T> void readInt(StringRef Name, T &&Set) {
    if (const json::Value *V = get(Name)) {
      if (std::optional<int64_t> I = V->getAsInteger())
        Set(*I);
      else
        wrongType(Name, "an integer");
    }
  }
  void readString(StringRef Name, std::string &Out) {
    if (const json::Value *V = get(Name)) {
      if (std::optional<StringRef> S = V->getAsString())
        Out = S->str();
      else
        wrongType(Name, "a string");
    }
  }
  void readStrings(StringRef Name, std::vector<std::string> &Out) {
    const json::Value *V = get(Name);
    if (!V)
      return;
    const json::Array *A = V->getAsArray();
    if (!A)
      return wrongType(Name, "a list of strings");
    Out.clear();
    for (const json::Value &E : *A) {
      std::optional<StringRef> S = E.getAsString();
      if (!S)
        return wrongType(Name, "a list of strings");
      Out.push_back(S->str());
    }
  }
  template <typename T> void readOptionalInt(StringRef Name, T &Out) {
    if (const json::Value *V = get(Name)) {
      if (V->kind() == json::Value::Null)
        Out.reset();
      else if (std::optional<int64_t> I = V->getAsInteger())
        Out = static_cast<typename T::value_type>(*I);
      else
        wrongType(Name, "an integer or null");
    }
  }
};
} // namespace

Expected<BackendConfigHeader> parseBackendConfig(StringRef Name, StringRef Text,
                                                 lto::Config &C) {
  auto Fail = [&](const Twine &Why) {
    return createStringError(inconvertibleErrorCode(),
                             "the dtlto-backend configuration '" + Name + "' " +
                                 Why);
  };
  Expected<json::Value> Root = json::parse(Text);
  if (!Root)
    return Fail("is damaged: " + toString(Root.takeError()));
  const json::Object *Obj = Root->getAsObject();
  if (!Obj || Obj->getString("format") != std::optional<StringRef>(Format))
    return Fail("is not a dtlto-backend configuration (expected format '" +
                Format + "')");
  BackendConfigHeader H;
  H.LLVMVersion = Obj->getString("llvm_version").value_or("").str();
  if (H.LLVMVersion != LLVM_VERSION_STRING)
    return Fail("was written by a linker on LLVM " + H.LLVMVersion +
                ", but this dtlto-backend runs LLVM " LLVM_VERSION_STRING
                "; install the same LLVM version on the linker and the "
                "workers");
  const json::Object *Fields = Obj->getObject("fields");
  const json::Array *Mllvm = Obj->getArray("mllvm");
  if (!Fields || !Mllvm)
    return Fail("is damaged: 'fields' or 'mllvm' is missing");
  for (const json::Value &A : *Mllvm) {
    std::optional<StringRef> S = A.getAsString();
    if (!S)
      return Fail("is damaged: 'mllvm' is not a list of strings");
    H.MllvmArgs.push_back(S->str());
  }

  FieldReader R{*Fields, {}};
#define READ_BOOL(F) R.readBool(#F, [&](bool B) { C.F = B; });
#define READ_INT(F)                                                            \
  R.readInt(#F, [&](int64_t I) {                                               \
    C.F = static_cast<std::remove_reference_t<decltype(C.F)>>(I);             \
  });
#define READ_STRING(F) R.readString(#F, C.F);
#define READ_STRINGS(F) R.readStrings(#F, C.F);
#define READ_OPTIONAL_INT(F) R.readOptionalInt(#F, C.F);
  DTLTO_BOOL_FIELDS(READ_BOOL)
  DTLTO_INT_FIELDS(READ_INT)
  DTLTO_STRING_FIELDS(READ_STRING)
  DTLTO_STRINGS_FIELDS(READ_STRINGS)
  DTLTO_OPTIONAL_INT_FIELDS(READ_OPTIONAL_INT)
  if (!R.Problem.empty())
    return Fail("is damaged: " + R.Problem);
  return H;
}

} // namespace dtlto
