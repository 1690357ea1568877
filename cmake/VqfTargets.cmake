# Helpers shared by every folder.
#
# vqf_add_library(NAME SOURCES ... [LIBS ...] [INCLUDES ...])
#   A static library NAME and, with VQFUSE_SANITIZE, a twin NAME-san compiled
#   with ASan+UBSan so that sanitized tests link sanitized code throughout.
#
# vqf_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s]
#              [ARGS ...] [HELGRIND] [NO_VALGRIND])
#   One cmocka program built twice (plain and -san) and registered as ctest
#   entries NAME (label unit), NAME-valgrind (label valgrind, memcheck with
#   --error-exitcode=1 --leak-check=full), NAME-sanitize (label sanitize) and,
#   with HELGRIND, NAME-helgrind (label helgrind).  valgrind and ASan do not
#   mix, hence the two builds.  LIBS naming a vqf_add_library() target link
#   its -san twin into the sanitized build.

set(VQF_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
	-fno-omit-frame-pointer)
find_program(VALGRIND_EXE valgrind)

# The -san twin of each library name is chosen when the build is
# generated, not when this runs: a library defined in a folder read later
# (sim/passthrough after sim/backend) has no twin yet at that point, and
# picking the plain one put uninstrumented code into sanitize programs.
# Anything that is not a plain target name (flags, genexes, paths) passes.
function(_vqf_san_libs out)
	set(res)
	foreach(l ${ARGN})
		if(l MATCHES "^[A-Za-z0-9_.+-]+$" AND NOT l MATCHES "-san$")
			list(APPEND res
				"$<IF:$<TARGET_EXISTS:${l}-san>,${l}-san,${l}>")
		else()
			list(APPEND res ${l})
		endif()
	endforeach()
	set(${out} ${res} PARENT_SCOPE)
endfunction()

function(vqf_add_library name)
	cmake_parse_arguments(A "" "" "SOURCES;LIBS;INCLUDES" ${ARGN})
	add_library(${name} STATIC ${A_SOURCES})
	target_include_directories(${name} PUBLIC ${A_INCLUDES})
	target_link_libraries(${name} PUBLIC ${A_LIBS})
	if(VQFUSE_SANITIZE)
		add_library(${name}-san STATIC EXCLUDE_FROM_ALL ${A_SOURCES})
		target_include_directories(${name}-san PUBLIC ${A_INCLUDES})
		_vqf_san_libs(sl ${A_LIBS})
		target_link_libraries(${name}-san PUBLIC ${sl})
		target_compile_options(${name}-san PRIVATE ${VQF_SAN_FLAGS})
	endif()
endfunction()

function(vqf_add_test name)
	cmake_parse_arguments(A "HELGRIND;NO_VALGRIND" "TIMEOUT"
		"SOURCES;LIBS;LABELS;ARGS" ${ARGN})
	if(NOT A_TIMEOUT)
		set(A_TIMEOUT 120)
	endif()
	add_executable(${name} ${A_SOURCES})
	target_link_libraries(${name} PRIVATE ${A_LIBS} cmocka)
	add_test(NAME ${name} COMMAND ${name} ${A_ARGS})
	set_tests_properties(${name} PROPERTIES LABELS "unit;${A_LABELS}"
		TIMEOUT ${A_TIMEOUT})
	if(VALGRIND_EXE AND NOT A_NO_VALGRIND)
		add_test(NAME ${name}-valgrind COMMAND ${VALGRIND_EXE} -q
			--error-exitcode=1 --leak-check=full
			--errors-for-leak-kinds=definite,indirect
			$<TARGET_FILE:${name}> ${A_ARGS})
		set_tests_properties(${name}-valgrind PROPERTIES
			LABELS "valgrind;${A_LABELS}"
			TIMEOUT ${A_TIMEOUT}0
			ENVIRONMENT "VQF_UNDER_VALGRIND=1")
	endif()
	if(VALGRIND_EXE AND A_HELGRIND)
		add_test(NAME ${name}-helgrind COMMAND ${VALGRIND_EXE} -q
			--tool=helgrind --error-exitcode=1
			--suppressions=${PROJECT_SOURCE_DIR}/tests/helgrind.supp
			$<TARGET_FILE:${name}> ${A_ARGS})
		set_tests_properties(${name}-helgrind PROPERTIES
			LABELS "helgrind;${A_LABELS}"
			TIMEOUT ${A_TIMEOUT}0
			ENVIRONMENT "VQF_UNDER_VALGRIND=1")
	endif()
	if(VQFUSE_SANITIZE)
		add_executable(${name}-san ${A_SOURCES})
		_vqf_san_libs(sl ${A_LIBS})
		target_link_libraries(${name}-san PRIVATE ${sl} cmocka)
		target_compile_options(${name}-san PRIVATE ${VQF_SAN_FLAGS})
		target_link_options(${name}-san PRIVATE ${VQF_SAN_FLAGS})
		add_test(NAME ${name}-sanitize COMMAND ${name}-san ${A_ARGS})
		set_tests_properties(${name}-sanitize PROPERTIES
			LABELS "sanitize;${A_LABELS}"
			TIMEOUT ${A_TIMEOUT}
			ENVIRONMENT
			"ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
	endif()
endfunction()

# Every folder below the calling one that has a CMakeLists.txt, found through
# folders that have none (tests/unit/req/ is picked up from tests/).
function(_vqf_add_subdirs_in dir bindir)
	file(GLOB children LIST_DIRECTORIES true ${dir}/*)
	foreach(c ${children})
		get_filename_component(n ${c} NAME)
		if(NOT IS_DIRECTORY ${c})
			continue()
		endif()
		if(EXISTS ${c}/CMakeLists.txt)
			add_subdirectory(${c} ${bindir}/${n})
		else()
			_vqf_add_subdirs_in(${c} ${bindir}/${n})
		endif()
	endforeach()
endfunction()

macro(vqf_add_subdirs)
	_vqf_add_subdirs_in(${CMAKE_CURRENT_SOURCE_DIR}
		${CMAKE_CURRENT_BINARY_DIR})
endmacro()
