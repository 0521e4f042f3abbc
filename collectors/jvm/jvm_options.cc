#include "collectors/jvm/jvm_options.h"

#include <array>

namespace memtrimd::jvm {
namespace {

// isspace() in the C locale, which both the launcher and HotSpot run under
// while they parse options.
bool IsCSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// args.c's separators: no vertical tab.
bool IsArgFileSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The splitting shared by JDK_JAVA_OPTIONS and HotSpot's options buffer.
Result<std::vector<std::string>> SplitQuoted(std::string_view s, const char* what) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsCSpace(s[i])) ++i;
    if (i >= s.size()) break;
    std::string token;
    while (i < s.size() && !IsCSpace(s[i])) {
      char c = s[i];
      if (c == '\'' || c == '"') {
        std::size_t close = s.find(c, i + 1);
        if (close == std::string_view::npos) {
          return Status(ErrorCode::kParseError, std::string("unmatched quote in ") + what);
        }
        token.append(s.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        token += c;
        ++i;
      }
    }
    out.push_back(std::move(token));
  }
  return out;
}

}  // namespace

std::vector<std::string> SplitArgFile(std::string_view s) {
  // The launcher reads the file in 4 KiB pieces and keeps a token's text
  // from before a piece boundary even where it would otherwise drop it (a
  // '#' inside a token); kChunk reproduces that.
  constexpr std::size_t kChunk = 4096;
  enum class State { kFindNext, kComment, kQuote, kEscape, kSkipLeadWs, kToken };
  std::vector<std::string> out;
  State st = State::kFindNext;
  std::string parts;  // pieces of the current token already taken
  bool has_parts = false;
  std::size_t anchor = 0;  // start of the piece not yet taken
  char quote = '"';
  auto take = [&](std::size_t end) {
    parts.append(s.substr(anchor, end - anchor));
    has_parts = true;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i % kChunk == 0 && i > 0 && (st == State::kToken || st == State::kQuote)) {
      if (anchor < i) take(i);
      anchor = i;
    }
    char c = s[i];
    if (st == State::kFindNext || st == State::kSkipLeadWs) {
      while (IsArgFileSpace(c)) {
        if (++i >= s.size()) return out;
        c = s[i];
      }
      st = st == State::kFindNext ? State::kToken : State::kQuote;
      anchor = i;
    } else if (st == State::kEscape) {
      if (c == '\n' || c == '\r') {
        st = State::kSkipLeadWs;  // backslash-newline joins the next line
      } else {
        switch (c) {
          case 'n':
            parts += '\n';
            break;
          case 'r':
            parts += '\r';
            break;
          case 't':
            parts += '\t';
            break;
          case 'f':
            parts += '\f';
            break;
          default:
            parts += c;
            break;
        }
        has_parts = true;
        st = State::kQuote;
      }
      anchor = i + 1;
      continue;
    } else if (st == State::kComment) {
      while (c != '\n' && c != '\r') {
        if (++i >= s.size()) return out;
        c = s[i];
      }
      anchor = i + 1;
      st = State::kFindNext;
      continue;
    }
    switch (c) {
      case ' ':
      case '\t':
      case '\f':
        if (st == State::kQuote) continue;
        [[fallthrough]];
      case '\n':
      case '\r':
        take(i);
        out.push_back(std::move(parts));
        parts.clear();
        has_parts = false;
        st = State::kFindNext;
        break;
      case '#':
        if (st == State::kQuote) continue;
        st = State::kComment;
        anchor = i + 1;
        break;
      case '\\':
        if (st != State::kQuote) continue;
        take(i);
        st = State::kEscape;
        anchor = i + 1;
        break;
      case '\'':
      case '"':
        if (st == State::kQuote && quote != c) continue;
        if (anchor != i) take(i);
        anchor = i + 1;
        if (st == State::kToken) {
          quote = c;
          st = State::kQuote;
        } else {
          st = State::kToken;
        }
        break;
      default:
        break;
    }
  }
  if (st == State::kToken || st == State::kQuote) {
    if (anchor < s.size()) take(s.size());
    if (has_parts) out.push_back(std::move(parts));
  }
  return out;
}

Result<std::vector<std::string>> SplitLauncherEnvOptions(std::string_view text) {
  return SplitQuoted(text, "JDK_JAVA_OPTIONS");
}

Result<std::vector<std::string>> SplitVmOptions(std::string_view text) {
  return SplitQuoted(text, "JVM options");
}

std::vector<std::string> SplitFlagsFile(std::string_view s) {
  constexpr std::size_t kTokenMax = 1023;  // HotSpot's char token[1024]
  std::vector<std::string> out;
  std::string token;
  bool in_white_space = true, in_comment = false, in_quote = false;
  char quote = 0;
  for (std::size_t i = 0; i < s.size() && token.size() < kTokenMax; ++i) {
    char c = s[i];
    if (in_white_space) {
      if (in_comment) {
        if (c == '\n') in_comment = false;
      } else if (c == '#') {
        in_comment = true;
      } else if (!IsCSpace(c)) {
        in_white_space = false;
        token += c;
      }
    } else if (c == '\n' || (!in_quote && IsCSpace(c))) {
      out.push_back(std::move(token));
      token.clear();
      in_white_space = true;
      in_quote = false;
    } else if (!in_quote && (c == '\'' || c == '"')) {
      in_quote = true;
      quote = c;
    } else if (in_quote && c == quote) {
      in_quote = false;
    } else {
      token += c;
    }
  }
  if (!token.empty()) out.push_back(std::move(token));
  return out;
}

namespace {

constexpr std::string_view kVmOptionsFile = "-XX:VMOptionsFile=";
constexpr std::string_view kFlagsFile = "-XX:Flags=";

// The launcher's options that take the next argument as their value
// (java.c IsWhiteSpaceOption). -jar, -m and --module are left out: their
// value is the main entry point.
bool TakesValue(std::string_view a) {
  static constexpr std::array<std::string_view, 16> kOptions = {"-cp",
                                                                "-classpath",
                                                                "--class-path",
                                                                "--describe-module",
                                                                "-d",
                                                                "--source",
                                                                "--module-path",
                                                                "-p",
                                                                "--upgrade-module-path",
                                                                "--add-modules",
                                                                "--enable-native-access",
                                                                "--limit-modules",
                                                                "--add-exports",
                                                                "--add-opens",
                                                                "--add-reads",
                                                                "--patch-module"};
  for (std::string_view o : kOptions) {
    if (a == o) return true;
  }
  return false;
}

// Options that, given to the application by mistake of ours, we still honour
// in the careful direction.
bool DisablesAttachOrSignals(std::string_view a) {
  if (StartsWith(a, "-J")) a.remove_prefix(2);
  return a == "-XX:+DisableAttachMechanism" || a == "-Xrs" || a == "-XX:+ReduceSignalUsage";
}

class Resolver {
 public:
  Resolver(const OptionFileReader& read, const OptionLimits& limits)
      : read_(read), limits_(limits) {}

  // A JVM option from `origin`; expands -XX:VMOptionsFile= and reads
  // -XX:Flags= files.
  Status Add(const std::string& option, const std::string& origin, bool in_options_file = false) {
    if (StartsWith(option, kVmOptionsFile)) {
      if (in_options_file) {
        return Status(ErrorCode::kParseError,
                      "a VM options file names another one (" + origin + ")");
      }
      std::string path = option.substr(kVmOptionsFile.size());
      Result<std::string> text = Read(path);
      if (!text.ok()) return text.status();
      Result<std::vector<std::string>> tokens = SplitVmOptions(*text);
      if (!tokens.ok())
        return Status(ErrorCode::kParseError, tokens.status().message() + " " + path,
                      tokens.status().cause());
      for (const std::string& t : *tokens) {
        Status st = Add(t, std::string(kVmOptionsFile) + path, true);
        if (!st.ok()) return st;
      }
      return Status::Ok();
    }
    if (StartsWith(option, kFlagsFile)) {
      std::string path = option.substr(kFlagsFile.size());
      Result<std::string> text = Read(path);
      if (!text.ok()) return text.status();
      for (const std::string& t : SplitFlagsFile(*text)) {
        Status st = Push(flags_, "-XX:" + t, std::string(kFlagsFile) + path);
        if (!st.ok()) return st;
      }
    }
    return Push(options_, option, origin);
  }

  // One argument the launcher handed over (JDK_JAVA_OPTIONS or the command
  // line), with its @argfile rules. Sets `main_seen` once the main class (or
  // jar, or module) is known.
  Status AddLauncherArg(const std::string& arg, const std::string& origin) {
    if (main_seen_) {
      if (DisablesAttachOrSignals(arg)) return Push(options_, arg, "application arguments");
      return Status::Ok();
    }
    if (!stop_expansion_ && arg.size() > 1 && arg[0] == '@') {
      if (arg[1] == '@') return Check(arg.substr(1), origin);  // "@@x" is the argument "@x"
      std::string path = arg.substr(1);
      Result<std::string> text = Read(path);
      if (!text.ok()) return text.status();
      for (const std::string& t : SplitArgFile(*text)) {
        Status st = Check(t, "@" + path);
        if (!st.ok()) return st;
      }
      return Status::Ok();
    }
    return Check(arg, origin);
  }

  std::vector<JvmOption> Take() {
    std::vector<JvmOption> all = std::move(flags_);
    all.insert(all.end(), std::make_move_iterator(options_.begin()),
               std::make_move_iterator(options_.end()));
    return all;
  }

 private:
  // The launcher's checkArg: which argument is the main class.
  Status Check(const std::string& arg, const std::string& origin) {
    if (main_seen_) return AddLauncherArg(arg, origin);
    bool main_after_this = false;
    if (!arg.empty() && arg[0] == '-') {
      expecting_value_ = TakesValue(arg);
      if (arg == "--disable-@files") stop_expansion_ = true;
      if (StartsWith(arg, "--module=")) main_after_this = true;
    } else {
      if (!expecting_value_) main_after_this = true;
      expecting_value_ = false;
    }
    Status st = Add(arg, origin);
    if (main_after_this) main_seen_ = true;
    return st;
  }

  Result<std::string> Read(const std::string& path) {
    if (++files_ > limits_.max_files) {
      return Status(ErrorCode::kTooLarge,
                    "more than " + std::to_string(limits_.max_files) + " option files");
    }
    Result<std::string> text = read_(path);
    if (!text.ok()) return text.status();
    if (text->size() > limits_.max_file_bytes) {
      return Status(ErrorCode::kTooLarge, "option file " + path + " is larger than " +
                                              std::to_string(limits_.max_file_bytes) + " bytes");
    }
    return text;
  }

  Status Push(std::vector<JvmOption>& to, std::string text, std::string origin) {
    if (flags_.size() + options_.size() >= limits_.max_options) {
      return Status(ErrorCode::kTooLarge,
                    "more than " + std::to_string(limits_.max_options) + " JVM options");
    }
    to.push_back(JvmOption{std::move(text), std::move(origin)});
    return Status::Ok();
  }

  const OptionFileReader& read_;
  const OptionLimits& limits_;
  std::size_t files_ = 0;
  bool main_seen_ = false;
  bool stop_expansion_ = false;
  bool expecting_value_ = false;
  std::vector<JvmOption> flags_;    // from -XX:Flags= files: applied before everything else
  std::vector<JvmOption> options_;  // everything else, in order
};

}  // namespace

Result<std::vector<JvmOption>> ResolveJvmOptions(const OptionSources& src,
                                                 const OptionFileReader& read_file,
                                                 const OptionLimits& limits) {
  Resolver r(read_file, limits);
  if (src.java_tool_options) {
    Result<std::vector<std::string>> tokens = SplitVmOptions(*src.java_tool_options);
    if (!tokens.ok()) return Status(ErrorCode::kParseError, "JAVA_TOOL_OPTIONS: unmatched quote");
    for (const std::string& t : *tokens) {
      Status st = r.Add(t, "JAVA_TOOL_OPTIONS");
      if (!st.ok()) return st;
    }
  }
  if (src.jdk_java_options) {
    Result<std::vector<std::string>> tokens = SplitLauncherEnvOptions(*src.jdk_java_options);
    if (!tokens.ok()) return tokens.status();
    for (const std::string& t : *tokens) {
      Status st = r.AddLauncherArg(t, "JDK_JAVA_OPTIONS");
      if (!st.ok()) return st;
    }
  }
  for (std::size_t i = 1; i < src.argv.size(); ++i) {
    Status st = r.AddLauncherArg(src.argv[i], "command line");
    if (!st.ok()) return st;
  }
  if (src.underscore_java_options) {
    Result<std::vector<std::string>> tokens = SplitVmOptions(*src.underscore_java_options);
    if (!tokens.ok()) return Status(ErrorCode::kParseError, "_JAVA_OPTIONS: unmatched quote");
    for (const std::string& t : *tokens) {
      Status st = r.Add(t, "_JAVA_OPTIONS");
      if (!st.ok()) return st;
    }
  }
  return r.Take();
}

}  // namespace memtrimd::jvm
